"""HTTP, the running side: one ``python -m workloads.http`` run per repetition.

The workload's CLI starts uvicorn and wrk itself, each pinned to its own core (the same two
cores the bench plans), checks every body and judges the run; this side reads its JSON record.
What is measured and why is the study's description (:mod:`bench.studies.http`).
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.plan import Point, Row
from bench.procs import Child, ChildFailed, python
from bench.studies.http import SECONDS, WARMUP_S
from bench.study import Measuring

PEER = "wrk"


def measure(point: Point, row: Row, cores, workdir: Path, full: bool) -> dict:
    """One repetition: a fresh uvicorn on the row's loop under a fresh wrk."""
    params = point.args
    out = workdir / "http.json"
    argv = python("-m", "workloads.http", "--loop", row.variant, "--path", params["path"])
    argv += ["--connections", str(params["connections"]), "--seconds", str(SECONDS[full])]
    argv += ["--warmup", str(WARMUP_S), "--json", str(out)]
    run = Child(argv, None, stderr_path=workdir / "http.err")  # it pins its own two processes
    try:
        usage = run.wait(timeout=point.cap_s or 120)
    finally:
        run.kill()
    if not out.exists():
        run.check(usage)  # no record: the CLI's own exit status and stderr say why
        raise ChildFailed(f"{run.short()} wrote no record{run.stderr_tail()}")
    record = json.loads(out.read_text())
    if not record["valid"]:
        raise ChildFailed(record["invalid_reason"])
    return {
        "requests_per_s": record["requests_per_s"],
        "server_cpu_us": record["server_cpu_us_per_request"],
        "latency_p50_ms": record["latency_us_p50"] / 1000,
        "latency_p99_ms": record["latency_us_p99"] / 1000,
        "peer_cpu_share": record["wrk_cpu_share"],
        "peer": PEER,
        "requests": record["requests"],
    }


MEASURING = Measuring(measure=measure)
