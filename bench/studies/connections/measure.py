"""Connections, the running side: a fresh echo server, and the memory peer
(``python -m workloads.echo.memory``) reading what it holds per connection from its own process.

What is measured and why is the study's description (:mod:`bench.studies.connections`).
"""

from __future__ import annotations

from pathlib import Path

# The order of these imports is part of the stored rows' fingerprints (bench.store).
# isort: off
from bench.studies.echo.measure import Serving, run_load
from bench.plan import Point, Row
from bench.procs import peer_python
from bench.study import Measuring

# isort: on
from workloads.echo.memory import SETTLE_S


def measure(point: Point, row: Row, cores, workdir: Path, full: bool) -> dict:
    """One repetition: a fresh server on the subject core, the memory peer on the peer core."""
    params = point.args
    with Serving(row, params, cores, workdir) as server:
        out = workdir / "memory.json"
        argv = peer_python(
            "-m", "workloads.echo.memory", "--port", str(server.port),
            "--server-pid", str(server.pid), "--connections", str(params["connections"]),
            "--size", str(params["size"]), "--json", str(out),
        )  # fmt: skip
        record = run_load(argv, cores.peer, workdir, "memory", 4 * SETTLE_S, peer="memory peer")
    return {
        "idle_bytes_per_connection": record["idle_bytes_per_connection"],
        "active_bytes_per_connection": record["active_bytes_per_connection"],
        "server_rss_mib": record["rss_active_bytes"] / 2**20,
    }


MEASURING = Measuring(measure=measure)
