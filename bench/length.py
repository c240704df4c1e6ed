"""How long a run will take, said before it starts: each point's pace (seconds per repetition,
its server's start and its generator's included) read from the last run stored there, times
the repetitions still to run. The run prints the estimate, then its actual length beside it."""

from __future__ import annotations

import datetime
import itertools
import json
import statistics
from collections.abc import Iterable
from pathlib import Path

# A gap between two repetitions longer than this is a pause (another point, a resumed run),
# not a repetition's length.
LONGEST_REPETITION_S = 120.0


def pace(path: Path, point_key: str) -> float | None:
    """Mean seconds from one repetition's start to the next at this point, as last stored (the
    mean, since a few slow rows are part of a point's length; None: nothing stored there)."""
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    point = stored.get("points", {}).get(point_key)
    if not point:
        return None
    starts = sorted(
        datetime.datetime.fromisoformat(rep["started_at"]).timestamp()
        for row in point["rows"].values()
        for rep in row["reps"]
        if rep.get("started_at")
    )
    gaps = [b - a for a, b in itertools.pairwise(starts) if 0 < b - a < LONGEST_REPETITION_S]
    return statistics.fmean(gaps) if gaps else None


def estimate(work: Iterable[tuple[Path, str, int]]) -> tuple[float, int]:
    """(seconds, repetitions with no stored pace) for (store path, point key, repetitions
    left) triples; the repetitions without a pace are not in the seconds."""
    seconds, unknown, paces = 0.0, 0, {}
    for path, key, left in work:
        if (path, key) not in paces:
            paces[path, key] = pace(path, key)
        if paces[path, key] is None:
            unknown += left
        else:
            seconds += left * paces[path, key]
    return seconds, unknown


def said(seconds: float, unknown: int = 0) -> str:
    """ "about N min" (and how many repetitions it could not count)."""
    text = f"about {seconds / 60:.0f} min" if seconds >= 90 else f"about {seconds:.0f} s"
    return text + (f", and {unknown} repetitions never run here before" if unknown else "")
