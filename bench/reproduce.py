"""Measure the headline point's key rows again in a new session, and say, row by row, whether
each ratio lands inside the interval the committed results give it.

    python -m bench reproduce [--results DIR]

The key rows are echo's controls (asyncio-protocol, uvloop-protocol, the selectors floor) and
every home-made loop, at 1 KiB x 100 connections in the closed loop and at the fixed load; the
ratios are each row's headline figure over each base's (asyncio-protocol, uvloop-protocol),
computed as every table computes them (``bench.render.rows``). The new session is measured into
a scratch folder and never replaces the committed results; its outcome is appended to
``reports/results/reproductions.json``, which the report reads, so how far the committed
ratios move between sessions is on the first screen. A session on another machine than the
committed results' is stored as such and counted apart.
"""

from __future__ import annotations

import datetime
import json
import tempfile
from pathlib import Path

import loops
from bench import registry, runner
from bench.plan import FLOOR, USER_BASE, YARDSTICK
from bench.registry import echo
from bench.render.rows import current_points, rendered_rows
from bench.store import REPRODUCTIONS as FILE
from bench.store import RESULTS, ResultStore, results_path
from machine import environment

WHERE = {name: str(value) for name, value in echo.HEADLINE_POINT.items()}


def key_loops() -> list[str]:
    """The controls and every home-made loop (asyncio, the baseline, comes along)."""
    home = [name for name, v in loops.discover().items() if v.available and not v.reference]
    return [USER_BASE, YARDSTICK, FLOOR, *home]


def ratios(store: ResultStore) -> dict[str, tuple[float, float, float]]:
    """'point · row × base' -> (ratio, low, high) at the headline points, as the tables give."""
    workload = registry.get("echo")
    current = current_points(workload, "quick")
    keys = key_loops()
    found = {}
    for key, point in store.data["points"].items():
        params = point["params"]
        if key not in current or any(str(params.get(k)) != v for k, v in WHERE.items()):
            continue
        metric = workload.columns_at(params)[0]
        regime = "fixed load" if params.get("measure") == echo.PACED else "closed loop"
        for row in rendered_rows(workload, point, current[key]):
            for base in (USER_BASE, YARDSTICK):
                if row.row.variant == base or row.row.variant not in keys:
                    continue
                interval = row.ratio_interval(metric, base)
                if interval is not None:
                    found[f"{regime} · {row.label} × {base}"] = interval
    return found


def compare(committed: dict, new: dict) -> list[dict]:
    return [
        {
            "ratio": name,
            "committed": list(committed[name]),
            "new": list(new[name]),
            "inside": committed[name][1] <= new[name][0] <= committed[name][2],
        }
        for name in sorted(committed.keys() & new.keys())
    ]


def run(results: Path = RESULTS) -> int:
    path = results_path(results, "quick", "echo")
    committed = ResultStore.load(path, "echo", "quick")
    with tempfile.TemporaryDirectory(prefix="lab-reproduce-") as scratch:
        status = runner.run(["echo"], False, key_loops(), True, Path(scratch), where=WHERE)
        new = ResultStore.load(results_path(Path(scratch), "quick", "echo"), "echo", "quick")
        outcome = compare(ratios(committed), ratios(new))
    env = environment.capture()
    machines = {environment.describe(s["environment"]) for s in committed.sessions.values()}
    same = machines == {environment.describe(env)}
    inside = sum(entry["inside"] for entry in outcome)
    for entry in outcome:
        (r, lo, hi), n = entry["committed"], entry["new"][0]
        mark = "inside" if entry["inside"] else "OUTSIDE"
        print(f"{entry['ratio']:<58} {r:5.2f} [{lo:.2f}-{hi:.2f}]  now {n:5.2f}  {mark}")
    print(f"reproduce: {inside} of {len(outcome)} ratios inside the committed intervals"
          + ("" if same else f" (another machine: {environment.describe(env)})"))  # fmt: skip
    file = results / FILE
    stored = json.loads(file.read_text()) if file.exists() else {"sessions": []}
    stored["sessions"].append(
        {
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": env["commit"],
            "machine": environment.describe(env),
            "same_machine": same,
            "committed_sessions": sorted(committed.sessions),
            "ratios": outcome,
        }
    )
    file.write_text(json.dumps(stored, indent=1) + "\n")
    return status
