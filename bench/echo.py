"""Echo: requests per second through every loop and style, and through the anchor servers.

One repetition: a fresh server process on the subject core (``python -m workloads.echo`` on
the loop and style under test, or an anchor ``python -m workloads.echo.native NAME``), a
warm-up load from the load generator on the peer core, then the measured load from a fresh
load generator process, then SIGTERM (the server must exit 0, with every socket closed). The
load generator (``python -m workloads.echo.load``, on uvloop) verifies every byte and reports
requests/s, MiB/s and latency percentiles from its histogram, the server's CPU seconds over the
load window, and its own CPU share; its share decides whether the repetition is valid.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
from pathlib import Path

from bench.plan import Chart, Metric, Point, Row, implemented_styles, variant_rows
from bench.procs import Child, ChildFailed, cpu_seconds, mib, python

NAME = "echo"
TITLE = "Echo"
PEER = "load generator"

# 10 000 connections is C10k: the bench raises its open-file limit (inherited by the server and
# the generator); handlers' select() ceiling shows there as its stated limit.
FULL = {"sizes": (64, 1024, 16384, 102400), "connections": (1, 10, 100, 1000, 10_000)}
QUICK_POINTS = ((1024, 1), (1024, 100))
TIMING = {  # seconds: (warm-up load, measured load)
    False: (0.2, 0.6),
    True: (1.0, 3.0),
}

METRICS = (
    Metric("requests_per_s", "requests/s", higher_is_better=True),
    Metric("mib_per_s", "MiB/s", higher_is_better=True, digits=2),
    Metric("latency_p50_ms", "p50 (ms)", higher_is_better=False, digits=3),
    Metric("latency_p99_ms", "p99 (ms)", higher_is_better=False, digits=3),
    Metric("server_cpu_per_100k", "server CPU (s / 100k req)", higher_is_better=False, digits=2),
    Metric("server_rss_mib", "server peak RSS (MiB)", higher_is_better=False, digits=1),
    Metric(
        "peer_cpu_share",
        "generator CPU (% of a core)",
        higher_is_better=False,
        scale=100,
        ratio=False,
    ),
)
HEADLINE = "requests_per_s"
CHARTS = (
    Chart(
        name="requests",
        metric="requests_per_s",
        x="connections",
        panels="size",
        title="Echo: requests per second by connections",
        x_label="connections",
    ),
)
DESCRIPTION = f"""\
A TCP echo server per loop and style, and the anchor servers a user would write instead in
each production loop's native API (asyncio and uvloop streams and Protocol, trio streams,
curio sockets) plus `selectors-floor`, a bare selectors loop with one callback per ready
socket: the pure-Python floor. Each connection of the load generator sends a message, reads
the whole echo and verifies every byte before the next. {__doc__.split(chr(10) * 2)[1]}
Server CPU is per 100 000 requests (lower is cheaper per request); peak RSS is the server
process's. Quick run: {TIMING[False][1]:g} s measured after {TIMING[False][0]:g} s of warm-up;
full run: {TIMING[True][1]:g} s after {TIMING[True][0]:g} s.
""".replace("\n", " ")


def unavailable() -> str | None:
    if importlib.util.find_spec("workloads.echo.load") is None:
        return "workloads/echo is not in this tree yet"
    return None


def anchor_names() -> list[str]:
    """The anchor servers whose library is installed here."""
    if importlib.util.find_spec("workloads.echo.native") is None:
        return []
    from workloads.echo.native import SERVERS

    needs = {"uvloop": "uvloop", "trio": "trio", "curio": "curio"}
    return [
        name
        for name in SERVERS
        if importlib.util.find_spec(needs.get(name.split("-")[0], "selectors")) is not None
    ]


def rows() -> list[Row]:
    return [
        *variant_rows(implemented_styles("workloads.echo")),
        *(Row(name, "native", anchor=True) for name in anchor_names()),
    ]


def points(full: bool) -> list[Point]:
    pairs = [(s, c) for s in FULL["sizes"] for c in FULL["connections"]] if full else QUICK_POINTS
    every_row = tuple(rows())
    warmup, duration = TIMING[full]
    return [
        Point(
            NAME,
            (
                ("size", size),
                ("connections", connections),
                ("warmup_s", warmup),
                ("duration_s", duration),
            ),
            every_row,
            5 if full else 3,
            3 if full else None,  # full: stop at 3 where the spread allows (bench.summary)
        )
        for size, connections in pairs
    ]


def size_text(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def point_title(params: dict) -> str:
    count = params["connections"]
    return f"{size_text(params['size'])} messages, {count:,} connection{'s' * (count != 1)}"


def panel_title(parameter: str, value) -> str:
    return f"{size_text(value)} messages"


def observations(params: dict, rendered: list) -> list[str]:
    """Where the best home-made loop stands against the pure-Python floor."""
    figures = {
        r.row.variant if r.row.anchor else r.label: r.summary.stats["requests_per_s"].median
        for r in rendered
        if r.summary.status == "ok" and "requests_per_s" in r.summary.stats
    }
    floor = figures.get("selectors-floor")
    home = [
        (r.summary.stats["requests_per_s"].median, r.label)
        for r in rendered
        if r.kind == "home-made"
        and r.summary.status == "ok"
        and "requests_per_s" in r.summary.stats
    ]
    if floor is None or not home:
        return []
    best, label = max(home)
    return [
        f"The best home-made loop ({label}) runs at {best / floor:.0%} of the bare-selectors floor."
    ]


def server_argv(row: Row) -> list[str]:
    if row.anchor:
        return python("-m", "workloads.echo.native", row.variant, "--port", "0")
    return python(
        "-m", "workloads.echo", "--loop", row.variant, "--style", row.style, "--port", "0"
    )


def load_argv(port: int, params: dict, duration: float, out: Path, server_pid: int) -> list[str]:
    return python(
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
    )


def run_load(argv: list[str], core, workdir: Path, name: str, timeout: float) -> dict:
    """One load generator process; its JSON record, or ChildFailed with its first error."""
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
            f"load generator ({name}) exited {usage.returncode}: {detail}{child.stderr_tail(300)}"
        )
    return record


def end_server(server: Child) -> None:
    """Make sure a server is gone and reaped, also one that already died on its own.

    ``Child.kill`` goes through ``Popen.kill``, whose ``poll()`` reaps a dead child before
    ``Child.wait`` can (``pidfd_open`` then fails with ProcessLookupError); a server that
    crashed (handlers at 10 000 connections) must still end its repetition with its reason.
    """
    if server.usage is None and server.proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGKILL)
        with contextlib.suppress(ChildFailed):
            server.wait(5)


def measure(point: Point, row: Row, cores, workdir: Path, full: bool) -> dict:
    """One repetition: fresh server, warm-up load, measured load, clean stop."""
    params = point.args
    warmup, duration = params["warmup_s"], params["duration_s"]
    timeout = duration + 60
    server = Child(
        server_argv(row), cores.subject, stdout=subprocess.PIPE, stderr_path=workdir / "server.err"
    )
    try:
        port = server.read_port(timeout=30)
        run_load(
            load_argv(port, params, warmup, workdir / "warmup.json", server.pid),
            cores.peer,
            workdir,
            "warm-up",
            timeout,
        )
        before = cpu_seconds(server.pid)
        record = run_load(
            load_argv(port, params, duration, workdir / "load.json", server.pid),
            cores.peer,
            workdir,
            "measured",
            timeout,
        )
        after = cpu_seconds(server.pid)
        usage = server.stop(timeout=15)
        server.check(usage)
    except ChildFailed as error:
        # The server's own words say why (a stated limit such as select()'s ceiling, a crash).
        end_server(server)
        raise ChildFailed(f"{error}{server.stderr_tail(2000)}") from error
    finally:
        end_server(server)
    server_cpu = record.get("server_cpu_s")
    if server_cpu is None and before is not None and after is not None:
        server_cpu = after - before
    requests = record["requests"]
    return {
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
    }
