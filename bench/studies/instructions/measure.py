"""Instructions per echo request for every echo row, counted under callgrind: a ranking of the
work each server does per request that no other process on the machine can move.

    python -m bench instructions [--loop NAME ...] [--regime closed|paced]

Each row (every variant in every style echo speaks, and every native anchor: uvloop's C and
libuv count like any other code) runs its echo server under ``valgrind --tool=callgrind``, at
the headline point (1 KiB x 100 connections), in both regimes: the closed loop, and a fixed
offered load of ``PACED_RATE`` requests/s (the bench's 8,000 would be far more than a server
fifty times slower under callgrind can keep; this rate every row keeps). The count is
``bench.studies.instructions.profile``'s (its folder's README): the instructions of the load
window alone, every connection open and primed, over the requests it served. What it sees:
every user-space instruction of the server process. What it cannot see: Linux's work in the
syscalls (the anatomy's syscall counts are beside it on the page), cache misses and stalls.
Stored in ``reports/results/instructions.json``; ``python -m bench report`` shows it.
"""

from __future__ import annotations

import datetime
import json
import shutil
import sys
from pathlib import Path

from bench import registry
from bench.fingerprint import fingerprint
from bench.headline import HEADLINE_POINT, server_rows
from bench.plan import Row
from bench.store import RESULTS
from bench.studies.echo.measure import server_argv
from bench.studies.instructions import FILE
from bench.studies.instructions.profile import (
    METHOD,
    _commit,
    callgrind_count,
    per_request,
    read_dump,
)
from machine import environment

PACED_RATE = 200  # requests/s over the 100 connections: kept by every row under callgrind
REGIMES = {"closed": None, "paced": PACED_RATE}  # regime -> offered rate (None: closed loop)
SECONDS = 2.0  # the counted window: 400 requests at the paced rate, thousands closed-loop


def count(row: Row, regime: str, seconds: float = SECONDS) -> dict:
    """One row's instructions per request in one regime, with what they were counted from."""
    server = server_argv(row)[1:]  # the module and its arguments, run under valgrind
    requests, window, _, work = callgrind_count(
        server, sys.executable, HEADLINE_POINT["connections"], seconds, REGIMES[regime]
    )
    try:
        total = sum(read_dump(window)[0].values())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "per_request": per_request(requests, total),
        "requests": requests,
        "instructions": total,
        "seconds": seconds,
        "method": METHOD,
    }


def run(
    loop_names: list[str] | None,
    results: Path = RESULTS,
    regimes: list[str] | None = None,
    seconds: float = SECONDS,
) -> int:
    """Count every (selected) echo row in each regime, storing each row as it is counted."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("instructions: valgrind is missing (apt-get install valgrind)", file=sys.stderr)
        return 1
    path = results / FILE
    stored = json.loads(path.read_text()) if path.exists() else {}
    env = environment.capture()
    machine = json.loads(json.dumps(environment.machine_key(env)))
    if stored.get("machine") != machine:
        stored = {"rows": {}}  # another machine's counts are not this one's
    stored |= {
        "machine": machine,
        "environment": env,
        "point": dict(HEADLINE_POINT),
        "rates": {name: rate for name, rate in REGIMES.items()},
    }
    rows = [r for r in server_rows() if not loop_names or r.variant in loop_names]
    failed = 0
    for number, row in enumerate(rows, 1):
        entry = stored["rows"].setdefault(row.key, {"label": row.label, "kind": row.kind})
        code = fingerprint(registry.get("echo"), row)
        for regime in regimes or list(REGIMES):
            print(f"instructions: [{number}/{len(rows)}] {row.label}, {regime}", flush=True)
            try:
                found = count(row, regime, seconds)
            except (RuntimeError, OSError) as error:
                found = {"error": str(error)[-500:]}
                failed += 1
            found |= {
                "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "commit": _commit(environment.ROOT),
                "code": code,
            }
            entry[regime] = _replace(entry.get(regime), found)
            if "per_request" in found:
                print(f"  {found['per_request']:,.0f} instructions per request", flush=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    return 1 if failed else 0


def _replace(earlier: dict | None, found: dict) -> dict:
    """A regime's stored count after a new one. The new count keeps the one it replaces as
    ``before`` where both counted the same code the same way, so the page shows how far a
    second count moved (two counts of a row agree within 1%); a count of changed code, or one
    taken another way, is a first count. A failed count replaces no good one: that stays, with
    the failure beside it."""
    if "per_request" not in found:
        return earlier | {"failed": found} if earlier and "per_request" in earlier else found
    same = ("code", "method", "seconds")
    if earlier and "per_request" in earlier and all(earlier.get(k) == found[k] for k in same):
        return found | {"before": {k: earlier[k] for k in ("per_request", "date", "commit")}}
    return found


def main(args) -> int:
    """``python -m bench run --study instructions``: the run's --loop and --results, and this
    study's --regime."""
    return run(args.loop, args.results, args.regime)
