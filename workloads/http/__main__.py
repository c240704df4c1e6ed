"""``python -m workloads.http``: uvicorn on one loop, loaded by wrk; one summary, optionally JSON.

Usage and the JSON record are in ``workloads/README.md``. The story:
start the server in its own process (pinned to one core), check each path's body once, warm
up, read the server's CPU, run wrk from its own process (pinned to the other core), read the
server's CPU again, stop the server, and judge the run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import subprocess
import sys
import time
import urllib.request

from machine.proc import cpu_seconds
from workloads.common import finish, number, positive
from workloads.http import wrk
from workloads.http.app import BODIES
from workloads.http.serve import add_server_arguments, loop_factory

READY_TIMEOUT = 20.0  # seconds for the server to print its ready line


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.http",
        description="Serve a small ASGI app with uvicorn on one loop and load it with wrk.",
    )
    add_server_arguments(parser)
    option = parser.add_argument
    option("--path", choices=sorted(BODIES), default="/plaintext", help="what wrk requests")
    option(
        "--seconds",
        type=number(float, 1, 600),
        default=3.0,
        help="load duration (wrk rounds to whole seconds; default %(default)s)",
    )
    option("--connections", type=positive(int), default=50, help="keep-alive connections")
    option("--threads", type=positive(int), default=1, help="wrk threads (default %(default)s)")
    option(
        "--warmup",
        type=number(float, 0, 60),
        default=1.0,
        help="seconds of load before the measured window (default %(default)s; 0: none)",
    )
    option("--json", metavar="FILE", help="write the result record as JSON ('-': stdout)")
    args = parser.parse_args(argv)
    loop_factory(parser, args.loop)  # a usage error now, not in the child
    if args.threads > args.connections:
        parser.error("--threads must not exceed --connections (wrk needs one per thread)")
    try:
        import uvicorn  # noqa: F401 (only asked whether it is there)
    except ImportError:
        parser.error("uvicorn is not installed (the dependency group 'http' has it)")
    try:
        wrk.command("http://x/", 1, 1, 1, 1)
    except wrk.WrkMissing as error:
        parser.error(str(error))
    return args


def cores() -> tuple[int | None, int | None]:
    """(server core, wrk core): two different cores where there are two, else unpinned."""
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return (usable[0], usable[1]) if len(usable) >= 2 else (None, None)


@contextlib.contextmanager
def server(args: argparse.Namespace, core: int | None):
    """The uvicorn process: yields (process, port); stopped with SIGTERM on the way out."""
    argv = [sys.executable, "-m", "workloads.http.serve", "--loop", args.loop, "--port", "0"]
    argv += ["--http", args.http]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        if core is not None:
            os.sched_setaffinity(process.pid, {core})
        line = _ready_line(process)
        port = int(line.split()[2].rsplit(":", 1)[1])
        yield process, port
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stdout.close()


def _ready_line(process: subprocess.Popen) -> str:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("listening on "):
            return line
        if not line and process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode}) before listening")
    raise RuntimeError(f"the server did not say it was listening within {READY_TIMEOUT} s")


def check_bodies(port: int) -> str:
    """GET every path once and compare the body: '' if all are right, else what was wrong."""
    for path, body in BODIES.items():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
                got = reply.read()
        except OSError as error:
            return f"GET {path} failed: {error}"
        if got != body:
            return f"GET {path} answered {got[:80]!r}, expected {body!r}"
    return ""


def run(args: argparse.Namespace) -> dict:
    """Serve, check, warm up, measure; the result record."""
    import uvicorn

    server_core, wrk_core = cores()
    record = {
        "workload": "http",
        "loop": args.loop,
        "http": args.http,
        "path": args.path,
        "connections": args.connections,
        "threads": args.threads,
        "duration_s": float(max(1, round(args.seconds))),
        "python": platform.python_version(),
        "uvicorn": uvicorn.__version__,
        "pinned": server_core is not None,
    }
    with server(args, server_core) as (process, port):
        url = f"http://127.0.0.1:{port}{args.path}"
        record["server_pid"] = process.pid
        record["body_error"] = check_bodies(port)
        if args.warmup > 0:
            wrk.run(wrk.command(url, args.warmup, args.connections, args.threads, 5), wrk_core)
        cpu_before = cpu_seconds(process.pid)
        argv = wrk.command(url, args.seconds, args.connections, args.threads, 5)
        result, wrk_cpu = wrk.run(argv, wrk_core)
        cpu_after = cpu_seconds(process.pid)
        # A server gone before its CPU was read has no figure; it is judged invalid below.
        server_cpu = 0.0 if None in (cpu_before, cpu_after) else cpu_after - cpu_before
        record["server_alive"] = process.poll() is None
    return judge(record, result, server_cpu, wrk_cpu)


def judge(record: dict, result: dict, server_cpu: float, wrk_cpu: float) -> dict:
    """Add wrk's figures and the verdict: a run with any failure is marked invalid."""
    wall = result["duration_us"] / 1e6
    requests = result["requests"]
    errors = {f"errors_{kind}": result[f"errors_{kind}"] for kind in wrk.ERROR_KINDS}
    failures = sum(errors.values())
    record |= {
        "wall_s": round(wall, 3),
        "requests": requests,
        "requests_per_s": round(requests / wall, 1) if wall else 0.0,
        **{key: result[key] for key in sorted(result) if key.startswith("latency_us_")},
        **errors,
        "failures": failures,
        "server_cpu_s": round(server_cpu, 3),
        "server_cpu_share": round(server_cpu / wall, 3) if wall else 0.0,
        "server_cpu_us_per_request": round(server_cpu / requests * 1e6, 2) if requests else 0.0,
        "wrk_cpu_share": round(wrk_cpu / wall, 3) if wall else 0.0,
    }
    reasons = []
    if record["body_error"]:
        reasons.append(record["body_error"])
    if failures:
        reasons.append(f"{failures} failed requests ({_nonzero(errors)})")
    if not requests:
        reasons.append("no request completed")
    if not record["server_alive"]:
        reasons.append("the server died during the load")
    record["valid"] = not reasons
    record["invalid_reason"] = "; ".join(reasons)
    record["ok"] = record["valid"]
    return record


def _nonzero(errors: dict) -> str:
    return ", ".join(f"{key[7:]} {n}" for key, n in errors.items() if n)


def summary_text(record: dict) -> str:
    verdict = "valid" if record["valid"] else f"INVALID: {record['invalid_reason']}"
    return (
        f"http {record['path']} on {record['loop']} (uvicorn {record['uvicorn']}, "
        f"{record['http']}), {record['connections']} connections: "
        f"{record['requests_per_s']:.0f} requests/s, latency p50 {record['latency_us_p50']} µs "
        f"p99 {record['latency_us_p99']} µs, server CPU {record['server_cpu_us_per_request']} µs "
        f"per request; {record['failures']} failures; {verdict}"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        record = run(args)
    except KeyboardInterrupt:
        print("python -m workloads.http: interrupted", file=sys.stderr)
        return 130
    return finish(record, args.json, summary_text(record))


if __name__ == "__main__":
    sys.exit(main())
