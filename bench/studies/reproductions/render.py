"""The headline ratios across sessions: each pooled from every session on the committed run's
machine that measured it (the committed run's and each reproduction's raw repetitions), and how
many reproduced ratios landed inside the intervals then committed: a bullet for the first
screen and a line for the glance, from ``reports/results/reproductions.json``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bench import uncertainty
from bench.headline import HEADLINE_PACED
from bench.render.intervals import CONFIDENCE, ratio_interval
from bench.studies.reproductions import FILE
from bench.study import Rendering
from machine import environment

# A ratio is pooled across sessions once this many, each begun in another hour, measured it: fewer
# leave it the committed session's own, said as within one session.
HOURS = 3


def sessions_at(results: Path, where: dict) -> list[tuple[str, dict]]:
    """(its date, the point) of every session on the committed quick run's machine that
    measured the point `where` holds: the committed run's, then each reproduction's."""
    path = results / "quick" / "echo.json"
    committed = json.loads(path.read_text()) if path.exists() else {}
    point = _point(committed.get("points", {}).values(), where)
    if point is None:
        return []
    newest = max((row["session"] for row in point["rows"].values()), default=None)
    env = committed.get("sessions", {}).get(newest, {}).get("environment")
    if env is None:  # no machine to pool on
        return []
    found = [(env["date"], point)]
    stored = results / FILE
    for session in json.loads(stored.read_text())["sessions"] if stored.exists() else []:
        mine = _point(session.get("points", {}).values(), where)
        if mine is not None and session["machine"] == environment.describe(env):
            found.append((session["date"], mine))
    return found


def _point(points, where: dict) -> dict | None:
    return next((p for p in points if all(p["params"].get(k) == v for k, v in where.items())), None)


def pooled(
    sessions: list[tuple[str, dict]],
    key: str,
    base: str,
    values: Callable[[list[dict], str], dict[int, float]],
    metric: str,
) -> uncertainty.Ratio | None:
    """key over base pooled across sessions (each session's paired ratio one observation:
    bench.uncertainty.pooled), or None where fewer than HOURS sessions begun in different
    hours measured both in one session."""
    ratios, hours = [], set()
    for date, point in sessions:
        rows = point["rows"]
        if key not in rows or base not in rows or rows[key]["session"] != rows[base]["session"]:
            continue
        found = ratio_interval(
            values(rows[key]["reps"], metric), values(rows[base]["reps"], metric)
        )
        if found is not None:
            ratios.append(uncertainty.Ratio(*found, n=0))
            hours.add(date[:13])
    return uncertainty.pooled(ratios) if len(hours) >= HOURS else None


def line(results: Path, link: str = "") -> list[str]:
    path = results / FILE
    sessions = json.loads(path.read_text())["sessions"] if path.exists() else []
    same = [s for s in sessions if s["same_machine"]]
    if not sessions:
        return [
            "*Reproduction:* not measured yet; `python -m bench reproduce` measures the "
            "headline point's key rows again and says which ratios land inside these "
            "intervals.",
            "",
        ]
    parts = []
    for session in same:
        moved = [abs(r["new"][0] / r["committed"][0] - 1) for r in session["ratios"]]
        inside = sum(r["inside"] for r in session["ratios"])
        parts.append(
            f"{session['date'][:16].replace('T', ' ')} UTC: {inside} of "
            f"{len(session['ratios'])} inside, moved at most {max(moved, default=0):.0%}"
        )
    elsewhere = len(sessions) - len(same)
    return [
        "*Reproduction* (`python -m bench reproduce`, the headline point's ratios measured "
        "again in a new session against these intervals): "
        + ("; ".join(parts) if parts else "no session on this page's machine yet")
        + (f"; {elsewhere} session(s) on another machine, not counted." if elsewhere else "."),
        "",
    ]


def bullet(results: Path) -> str | None:
    """How still the headline figures are: how many ratios measured again landed inside the
    intervals committed when they were measured, and how many sessions the first screen's
    ratios are pooled from (None: never reproduced)."""
    path = results / FILE
    sessions = json.loads(path.read_text())["sessions"] if path.exists() else []
    if not sessions:
        return None
    here = sessions_at(results, dict(HEADLINE_PACED))
    hours = {date[:13] for date, _ in here}
    same = [s for s in sessions if s["same_machine"]]
    ratios = [r for s in same for r in s["ratios"]]
    inside = sum(r["inside"] for r in ratios)
    measured = (
        f"measured again in {len(same)} later session(s) on the machine of the figures then "
        f"committed, {inside} of {len(ratios)} headline ratios landed inside the "
        f"{CONFIDENCE:.0%} intervals "
        "committed before them (a calibrated interval misses about 1 in 20; each holds one "
        "session's noise, so a move between sessions shows as a miss)"
    )
    if len(hours) >= HOURS:
        # Pooling is per ratio: a row the reproductions did not measure, or sessions in fewer
        # hours that measured both its rows, leave that cell the committed session's.
        said = (
            f"{len(here)} sessions on this page's machine, begun in {len(hours)} different "
            f"hours: a capacity or idle-cost ratio below is pooled where sessions begun in "
            f"{HOURS} different hours measured both its rows (its cell says across how many: the "
            "t-interval of the session means), else it is the committed session's"
        )
    else:
        said = (
            f"{len(here)} session(s) on this page's machine so far, begun in {len(hours)} "
            f"different hour(s): the ratios below are pooled once {HOURS} hours are, and are "
            "the committed session's until then"
        )
    return (
        f"**How still these figures are** (`python -m bench run --study reproductions`): "
        f"{measured}; {said}."
    )


# Its lines are the first screen's, not a section: the page and the verdict read line() and
# bullet() where they open.
RENDERING = Rendering()
