"""Twins: what an idea costs against the design it is built on. For each pair of home-made
loops whose kernels are declared twins (``tests/twins/<a>.kernel--<b>.kernel.diff``: the diff is
the lesson), the second's figures over the first's, each pair of rows measured in one session:
per request at echo's headline point in both measures, and per sleeper, in CPU and in memory.
"""

from __future__ import annotations

import re
from pathlib import Path

import loops
from bench import headline
from bench.pages.chooser import capacity_rounds, cell, point
from bench.render.intervals import CONFIDENCE
from bench.render.page import Page
from bench.render.tables import ran_in_all
from bench.summary import by_round

TWINS = Path(__file__).resolve().parents[2] / "tests" / "twins"
KERNELS = re.compile(r"^(\w+)\.kernel--(\w+)\.kernel\.diff$")
SLEEPERS = 10_000  # the sleep study's middle size in the quick run
RESIDENT = 100_000  # its resident size

# (figure, study, where, metric, unit, values): what a pair is read by, in this order.
FIGURES = (
    ("echo, per request, closed loop", "echo", dict(headline.HEADLINE_CLOSED), "server_cpu_us",
     "{:.1f} µs", capacity_rounds),
    ("echo, per request, fixed load", "echo", dict(headline.HEADLINE_PACED), "server_cpu_us",
     "{:.1f} µs", by_round),
    (f"sleep, CPU per sleeper ({SLEEPERS:,})", "sleep", {"mode": "sleepers", "tasks": SLEEPERS},
     "cpu_per_sleeper_us", "{:.2f} µs", by_round),
    (f"sleep, memory per sleeper ({RESIDENT:,})", "sleep", {"mode": "resident",
     "tasks": RESIDENT}, "bytes_per_sleeper", "{:,.0f} B", by_round),
)  # fmt: skip


def pairs(folder: Path = TWINS) -> list[tuple[str, str]]:
    """(the design, its twin) for every kernel twin declared, of loops discovery finds."""
    found = [KERNELS.match(path.name) for path in sorted(folder.glob("*.diff"))]
    known = loops.discover()
    return [m.groups() for m in found if m and m[1] in known and m[2] in known]


def section(page: Page) -> list[str]:
    """The twins' table and where its rows ran ([] where nothing of it is stored)."""
    rows, read = [], {}
    for first, second in pairs():
        style = next(s for s in loops.get(first).styles if s in loops.get(second).styles)
        keys = (f"{first}/{style}", f"{second}/{style}")
        for figure, study, where, metric, unit, values in FIGURES:
            store = page.stores.get(study)
            found = point(store.data if store else None, where)
            if found is None or not all(key in found["rows"] for key in keys):
                continue
            read[figure, keys] = store.sessions, {"rows": {k: found["rows"][k] for k in keys}}
            base = cell(found, keys[0], metric, unit, values, base=keys[0])
            twin = cell(found, keys[1], metric, unit, values, base=keys[1])
            ratio = cell(found, keys[1], metric, unit, values, base=keys[0])
            rows.append(f"| `{second}` on `{first}` | {figure} | {base} | {twin} | {ratio} |")
    if not rows:
        return []
    return [
        "## Twins",
        "",
        "What an idea costs against the design it is built on: each pair of home-made loops "
        "whose kernels are declared twins (`tests/twins/`, the diff between them is the "
        "lesson), the twin's figure over the design's, both rows measured in one session, with "
        f"the {CONFIDENCE:.0%} interval of that session's rounds (paired) and what it says.",
        "",
        "| twin | figure | the design | the twin | twin ÷ design |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"*Ran in:* {ran_in_all(list(read.values()))}",
        "",
    ]
