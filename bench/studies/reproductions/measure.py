"""Measure the headline point's key rows again in a new session, and say, row by row, whether
each ratio lands inside the interval the committed results give it.

    python -m bench reproduce [--results DIR]

The key rows are echo's anchors (the servers users write, the controls among them) and the
home-made loops discovery finds, ROUNDS rounds each at 1 KiB x 100 connections in the closed
loop and at the fixed load; the ratios are each row's headline figure over each base's
(asyncio-protocol, uvloop-protocol), computed as every table computes them
(``bench.render.rows``). The new session is measured into a scratch folder and never replaces
the committed results; its outcome is appended to ``reports/results/reproductions.json`` with
the session's raw repetitions, from which the first screen pools each headline ratio across
sessions (``render.py``). A session on another machine than the committed results' is stored
as such and counted apart.
"""

from __future__ import annotations

import datetime
import json
import tempfile
from pathlib import Path

import loops
from bench import headline, registry, runner
from bench.plan import USER_BASE, YARDSTICK, anchor_names
from bench.render.rows import current_points, rendered_rows
from bench.store import RESULTS, ResultStore, results_path
from bench.studies.reproductions import FILE
from machine import environment

# The plain headline points ("None": the TLS parameter absent, bench.runner.matches), not the
# loaded rate's point of the cost curve beside them.
WHERE = {
    name: str(value)
    for name, value in (*headline.HEADLINE_POINT.items(), headline.PLAIN, (headline.CURVE[0], None))
}


# Each row's rounds in a reproduction: a paired interval per session in a few minutes; across
# sessions, each session's ratio is one observation (bench.uncertainty.pooled).
ROUNDS = 6


def key_loops() -> list[str]:
    """The key rows' loops (bench.plan.key_row): the anchor servers, the controls among them,
    and the home-made loops discovery finds (asyncio, the baseline, comes along)."""
    home = [name for name, v in loops.discover().items() if v.available and not v.reference]
    return [*anchor_names(), *home]


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
        regime_name = headline.regime(params)
        for row in rendered_rows(workload, point, current[key]):
            for base in (USER_BASE, YARDSTICK):
                if row.row.variant == base or row.row.variant not in keys:
                    continue
                interval = row.ratio_interval(metric, base)
                if interval is not None:
                    found[f"{regime_name} · {row.label} × {base}"] = interval
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


def repetitions(store: ResultStore) -> dict[str, dict]:
    """The headline points of a session, as stored (params, baselines, each row's
    repetitions)."""
    return {
        key: point
        for key, point in store.data["points"].items()
        if all(str(point["params"].get(k)) == v for k, v in WHERE.items())
    }


def run(results: Path = RESULTS) -> int:
    path = results_path(results, "quick", "echo")
    committed = ResultStore.load(path, "echo", "quick")
    with tempfile.TemporaryDirectory(prefix="lab-reproduce-") as scratch:
        status = runner.run(
            ["echo"], False, key_loops(), True, Path(scratch), where=WHERE, rounds=ROUNDS
        )
        new = ResultStore.load(results_path(Path(scratch), "quick", "echo"), "echo", "quick")
        outcome = compare(ratios(committed), ratios(new))
        measured = repetitions(new)
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
            "paired": True,  # its ratios paired by round, as every page's since
            "ratios": outcome,
            # The session's own repetitions, so that sessions can be pooled into one figure
            # (and every ratio above recomputed) from this file alone.
            "points": measured,
        }
    )
    file.write_text(json.dumps(stored, indent=1) + "\n")
    return status


def main(args) -> int:
    """``python -m bench run --study reproductions``: the run's --results."""
    return run(args.results)
