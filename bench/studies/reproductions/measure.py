"""Measure the headline point's key rows again in a new session, and say, row by row, whether
each ratio lands inside the interval the committed results give it.

    python -m bench reproduce [--results DIR]

The key rows are echo's controls (asyncio-protocol, uvloop-protocol, the selectors floor) and
every home-made loop, at 1 KiB x 100 connections in the closed loop and at the fixed load; the
ratios are each row's headline figure over each base's (asyncio-protocol, uvloop-protocol),
computed as every table computes them (``bench.render.rows``). The new session is measured into
a scratch folder and never replaces the committed results; its outcome is appended to
``reports/results/reproductions.json`` with the session's raw repetitions, which the report
reads, so how far the committed ratios move between sessions is on the first screen. A
session on another machine than the committed results' is stored as such and counted apart.
"""

from __future__ import annotations

import datetime
import json
import math
import tempfile
from pathlib import Path

import loops
from bench import headline, registry, runner
from bench.plan import FLOOR, USER_BASE, YARDSTICK
from bench.render.rows import current_points, rendered_rows
from bench.store import BETWEEN_SESSIONS, RESULTS, ResultStore, results_path
from bench.studies.reproductions import FILE
from machine import environment

# The plain headline points ("None": the TLS parameter absent, bench.runner.matches).
WHERE = {name: str(value) for name, value in (*headline.HEADLINE_POINT.items(), headline.PLAIN)}


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
        status = runner.run(["echo"], False, key_loops(), True, Path(scratch), where=WHERE)
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
    store_spread(results)
    return status


def store_spread(results: Path = RESULTS) -> int:
    """Store on the committed headline points how far their ratios moved between sessions on
    this machine (the first screen says it beside the intervals, which are within one
    session)."""
    file, path = results / FILE, results_path(results, "quick", "echo")
    if not file.exists() or not path.exists():
        print(f"reproduce: nothing to take a spread from ({file}, {path})")
        return 1
    machine = environment.describe(environment.capture())
    spreads = between_sessions(json.loads(file.read_text()), machine)
    committed = ResultStore.load(path, "echo", "quick")
    for point in committed.data["points"].values():
        if all(str(point["params"].get(k)) == v for k, v in WHERE.items()):
            point[BETWEEN_SESSIONS] = spreads.get(headline.regime(point["params"]))
    committed.save()
    for name, spread in sorted(spreads.items()):
        print(f"between sessions, {name}: {spread['spread']:.1%} over {spread['ratios']} ratios "
              f"of {spread['sessions']} session(s)")  # fmt: skip
    return 0


def between_sessions(stored: dict, machine: str) -> dict[str, dict]:
    """Regime -> how far a headline ratio moves from one session to another on `machine`: the
    root mean square of ln(new / committed) over every ratio every reproduction there measured
    (a difference of two sessions, so it holds both sessions' moves), with the counts."""
    moves: dict[str, list[float]] = {}
    dates: dict[str, set[str]] = {}
    here = [s for s in stored["sessions"] if s["machine"] == machine]
    # Ratios of two medians over 3 repetitions moved more than paired ones over 6 do: once a
    # session measured paired ratios, only such sessions say how far they move.
    for session in [s for s in here if s.get("paired")] or here:
        for entry in session["ratios"]:
            name = entry["ratio"].split(" · ")[0]
            moves.setdefault(name, []).append(math.log(entry["new"][0] / entry["committed"][0]))
            dates.setdefault(name, set()).add(session["date"])
    return {
        name: {
            "spread": math.sqrt(sum(m * m for m in found) / len(found)),
            "sessions": len(dates[name]),
            "ratios": len(found),
        }
        for name, found in moves.items()
    }


def main(args) -> int:
    """``python -m bench run --study reproductions``: the run's --results, and this study's
    --spread-only."""
    return store_spread(args.results) if args.spread_only else run(args.results)
