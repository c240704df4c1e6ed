"""How far the committed headline ratios moved when measured again: a bullet for the first
screen and a line for the glance, from ``reports/results/reproductions.json`` and the spread
``python -m bench reproduce`` stores on the headline points."""

from __future__ import annotations

import json
from pathlib import Path

from bench.headline import regime
from bench.store import BETWEEN_SESSIONS
from bench.studies.reproductions import FILE
from bench.study import Rendering


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


def bullet(results: Path, points: list[dict]) -> str | None:
    """How still the headline ratios are: their spread between sessions (which the intervals,
    each within one session, do not hold), and the newest reproduction's count inside (None:
    never reproduced)."""
    path = results / FILE
    sessions = json.loads(path.read_text())["sessions"] if path.exists() else []
    same = [s for s in sessions if s["same_machine"]]
    spreads = {
        regime(point["params"]): point[BETWEEN_SESSIONS]
        for point in points
        if point.get(BETWEEN_SESSIONS)
    }
    if not same or not spreads:
        return None
    last = same[-1]
    inside = sum(r["inside"] for r in last["ratios"])
    moved = " and ".join(
        f"{spread['spread']:.1%} at the {name}" if name == "fixed load"
        else f"{spread['spread']:.1%} in the {name}"
        for name, spread in sorted(spreads.items())
    )  # fmt: skip
    counted = max(spread["sessions"] for spread in spreads.values())
    return (
        "**How still these figures are** (`python -m bench reproduce`): measured again in "
        f"another session, a headline ratio moves by {moved} (root mean square, {counted} "
        "session(s) on this machine); the intervals on these pages are each within one "
        f"session and do not hold that move; the newest session, "
        f"{last['date'][:16].replace('T', ' ')} UTC, landed {inside} "
        f"of {len(last['ratios'])} ratios inside the intervals then committed."
    )


# Its lines are the first screen's, not a section: the page and the verdict read line() and
# bullet() where they open.
RENDERING = Rendering()
