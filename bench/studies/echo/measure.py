"""Echo, the running side: one repetition (a fresh server, a warm-up load, a measured load).

What a repetition is and why it is shaped so is the workload's own description
(:mod:`bench.studies.echo`), which also declares each fixed-load point's offered rate (a
parameter of the point) and its TLS points (``tls``: both processes get ``--tls``). Here: the
server and load generator command lines, and :func:`measure`, which turns the generator's
record into the figures the declaration names.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# The order of these imports is part of the stored rows' fingerprints (bench.fingerprint).
# isort: off
from bench.plan import Point, Row
from bench.procs import Child, ChildFailed, mib, peer_python, python
from bench.headline import PACED, TLS
from bench.summary import SATURATION, known_limit
from bench.study import Measuring

# isort: on

PEER = "load generator"
# A server that fell behind while using less than this share of its core was not too slow but
# kept waiting (by other processes on a shared machine): its row says so.
IDLE_SHARE = 0.5
# In the closed loop at this many connections or more the server always has a request waiting,
# so it runs nearly all the time; one busy under STALL_BUSY of its core while the generator was
# not saturated waited for a CPU something else held: a stall, measured again. Chosen from the
# closed-loop repetitions at 1 KiB x 100 connections that the quick runs committed at 2191f2b
# hold (reports/results/quick/**/echo.json, every interpreter): 284 of 363 ran the server at
# 0.90 or more of its core (266 at 0.95 or more); the other 79 spread down to 0.35, the
# generator at most 0.80 of its own, the end of one round into the next in the same session.
STALL_CONNECTIONS = 100
STALL_BUSY = 0.90


def server_argv(row: Row, params: dict | None = None) -> list[str]:
    """The server's command line; a TLS point's server makes its certificate at start."""
    tls = ("--tls",) if (params or {}).get(TLS) else ()
    if row.anchor:
        return python("-m", "workloads.echo.native", row.variant, "--port", "0", *tls)
    return python(
        "-m", "workloads.echo", "--loop", row.variant, "--style", row.style, "--port", "0", *tls
    )


def load_argv(
    port: int, params: dict, duration: float, out: Path, server_pid: int, warmup: float = 0.0
) -> list[str]:
    return peer_python(
        "-m",
        "workloads.echo.load",
        "--port",
        str(port),
        "--connections",
        str(params["connections"]),
        "--size",
        str(params["size"]),
        "--duration",
        str(duration),
        "--json",
        str(out),
        "--server-pid",
        str(server_pid),
        *(("--rate", str(params["rate"])) if "rate" in params else ()),
        *(("--tls",) if params.get(TLS) else ()),  # every handshake before the window
        *(("--warmup", str(warmup)) if warmup else ()),
    )


def run_load(
    argv: list[str], core, workdir: Path, name: str, timeout: float, peer: str = "load generator"
) -> dict:
    """One peer process (the load generator, or another peer of the echo server's); its JSON
    record, or ChildFailed with its first error."""
    out = Path(argv[argv.index("--json") + 1])
    child = Child(argv, core, stderr_path=workdir / f"{name}.err")
    try:
        usage = child.wait(timeout)
    finally:
        child.kill()
    record = json.loads(out.read_text()) if out.exists() else None
    if usage.returncode != 0 or record is None or not record.get("ok"):
        detail = record.get("first_error") if record else ""
        raise ChildFailed(
            f"{peer} ({name}) exited {usage.returncode}: {detail}{child.stderr_tail(300)}"
        )
    return record


def stated_limit(server: Child) -> str:
    """The line of a server's stderr naming a stated limit it hit (select()'s ceiling), if any.

    Its traceback can be long, and the limit is named at its start, not in the tail.
    """
    if server.stderr_path is None or not server.stderr_path.exists():
        return ""
    for line in server.stderr_path.read_text(errors="replace").splitlines():
        if known_limit(line):
            return f"\nserver: {line.strip()}"
    return ""


def measure(point: Point, row: Row, cores, workdir: Path, full: bool) -> dict:
    """One repetition: fresh server, warm-up load, measured load, clean stop."""
    params = point.args
    basis = "declared" if params.get("measure") == PACED else ""
    record, server_cpu, usage = serve(row, params, cores, workdir)
    return figures(record, server_cpu, usage, params, basis)


def serve(row: Row, params: dict, cores, workdir: Path) -> tuple[dict, float | None, object]:
    """A fresh server under a warm-up load then the measured one: the generator's record, the
    server's CPU seconds over the measured load, and the server's usage once stopped."""
    with Serving(row, params, cores, workdir) as server:
        # One generator process runs both loads: a second interpreter's start per repetition
        # was a sixth of a fixed-load repetition's length, and measured nothing.
        record = server.load("measured", params["duration_s"], warmup=params["warmup_s"])
    return record, record.get("server_cpu_s"), server.usage


class Serving:
    """One repetition's fresh echo server, pinned to the subject's core, and the loads run
    against it from the peer's core: ``with Serving(...) as server: server.load(name, s)``.
    Leaving the block stops the server and checks its exit (``usage``); a failure anywhere
    kills it and says why in the server's own words (a stated limit such as select()'s
    ceiling, a crash)."""

    def __init__(self, row: Row, params: dict, cores, workdir: Path) -> None:
        self.params, self.cores, self.workdir = params, cores, workdir
        self.server = Child(
            server_argv(row, params), cores.subject, stdout=subprocess.PIPE,
            stderr_path=workdir / "server.err",
        )  # fmt: skip
        self.pid = self.server.pid
        self.port = 0
        self.usage = None

    def __enter__(self) -> Serving:
        try:
            self.port = self.server.read_port(timeout=30)
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise
        return self

    def load(self, name: str, seconds: float, warmup: float = 0.0) -> dict:
        """A load generator run against the server, after `warmup` seconds of the same load
        from the same process: its record (ChildFailed if it failed)."""
        out = self.workdir / f"{name}.json"
        argv = load_argv(self.port, self.params, seconds, out, self.pid, warmup)
        return run_load(argv, self.cores.peer, self.workdir, name, warmup + seconds + 120)

    def __exit__(self, kind, error, traceback) -> None:
        server = self.server
        try:
            if kind is None:
                self.usage = server.stop(timeout=30)
                server.check(self.usage)
        except ChildFailed as failed:
            error = failed
        finally:
            server.kill()
        if isinstance(error, ChildFailed):
            raise ChildFailed(f"{error}{stated_limit(server)}{server.stderr_tail(2000)}") from error


def figures(record: dict, server_cpu: float, usage, params: dict, basis: str) -> dict:
    """The figures the declaration names, from the generator's record and the server's CPU."""
    requests = record["requests"]
    server_us = server_cpu / requests * 1e6 if requests else None
    # How often the server blocked per request (each block a wake-up): what a regime's cost is
    # made of, beside the cost itself (the first screen says it per regime).
    blocked = record.get("server_switches_voluntary")
    blocks = blocked / requests if requests and blocked is not None else None
    peer_us = record["load_cpu_s"] / requests * 1e6 if requests else None
    found = {
        "generator": record.get("generator", "python"),
        "generator_note": record.get("generator_note", ""),
        "server_cpu_us": server_us,
        "peer_cpu_us": peer_us,
        "latency_p999_ms": record["latency_us_p999"] / 1000,
    }
    if params.get("measure") == PACED:
        found |= paced_figures(record, basis)
    else:
        found |= closed_stall(record, params)
    return found | {
        "requests_per_s": record["requests_per_s"],
        "mib_per_s": record["mib_per_s"],
        "latency_p50_ms": record["latency_us_p50"] / 1000,
        "latency_p99_ms": record["latency_us_p99"] / 1000,
        "server_cpu_per_100k": server_cpu / requests * 100_000 if requests else None,
        "server_rss_mib": mib(usage.peak_rss_bytes),
        "peer_cpu_share": record["load_cpu_share"],
        "peer": PEER,
        "requests": requests,
        "server_cpu_share": record.get("server_cpu_share"),
        "server_blocks_per_request": blocks,
    }


def paced_figures(record: dict, basis: str) -> dict:
    """At a fixed offered load: the rate, and why the repetition is invalid if it fell behind."""
    requests = record["requests"]
    found = {
        "rate": record["rate"],
        "rate_basis": basis,
        "scheduled": record["scheduled"],
        "rate_achieved": record["rate_achieved"],
    }
    if not record["kept_rate"]:
        found["invalid"] = (
            f"server could not keep the rate ({requests:,} of {record['scheduled']:,} "
            "scheduled requests"
        )
        share = record.get("server_cpu_share")
        if share is not None and share < IDLE_SHARE:
            # Not too slow, it waited: on a shared machine, other processes held a core.
            found["invalid"] += f", busy {share:.0%} of the time: a stall, not a slow server"
            found["stalled"] = True
        found["invalid"] += ")"
    return found


def closed_stall(record: dict, params: dict) -> dict:
    """In the closed loop, where the server should never wait: why a repetition is a stall."""
    share, peer = record.get("server_cpu_share"), record.get("load_cpu_share")
    if (
        params.get("connections", 0) < STALL_CONNECTIONS
        or share is None
        or share >= STALL_BUSY
        or (peer is not None and peer >= SATURATION)
    ):
        return {}
    return {
        "invalid": f"stalled: the server was busy {share:.0%} of its core, the generator "
        f"{peer or 0:.0%} of its own: it waited for a CPU something else held",
        "stalled": True,
    }


MEASURING = Measuring(measure=measure)
