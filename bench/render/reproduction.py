"""How far the committed headline ratios moved when measured again: one line for the first
screen, from ``reports/results/reproductions.json`` (``python -m bench reproduce``)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.store import REPRODUCTIONS as FILE


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
