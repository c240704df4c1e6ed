"""The native echo load generator: build ``loadgen.c`` once, run it, read back what it measured.

On loopback the client pays the kernel's TCP work as much as the server does, so a Python
client saturates its core first and the bench would measure the generator; the hot path is C
in ``loadgen.c``, and this module is its thin wrapper: :func:`build` compiles it on first use,
:func:`generate` runs it and returns what the Python generator returns.
``python -m workloads.echo.loadgen`` measures the generator's own cost (``workloads/README.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SOURCE = Path(__file__).with_name("loadgen.c")
FLAGS = ("-O2", "-std=c11", "-Wall")
# The TLS build (``--tls``): the same source with OpenSSL compiled in and linked.
TLS_FLAGS = ("-DLOADGEN_TLS",)
TLS_LIBS = ("-lssl", "-lcrypto")
COMPILER = "cc"


def cache_dir() -> Path:
    """Where built binaries live: never in the source tree."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "event-loop-lab"


def build(tls: bool = False) -> tuple[Path | None, str]:
    """The built generator (compiling it if needed), or None and why not, in one line.
    With `tls`, the build that speaks TLS through OpenSSL (its headers and libssl needed).

    The binary is cached outside the source tree (:func:`cache_dir`), named by a hash of the
    source and the flags, so an edit rebuilds and concurrent runs share the result (it is
    written under a temporary name, then renamed into place). With None,
    ``workloads.echo.load`` falls back to its Python generator and the record says so."""
    source = SOURCE.read_bytes()
    flags, libs = (FLAGS + TLS_FLAGS, TLS_LIBS) if tls else (FLAGS, ())
    key = hashlib.sha256(source + " ".join(flags + libs).encode() + os.uname().machine.encode())
    target = cache_dir() / f"loadgen-{'tls-' if tls else ''}{key.hexdigest()[:16]}"
    what = f"{SOURCE.name} with OpenSSL" if tls else SOURCE.name
    if os.access(target, os.X_OK):
        return target, ""
    compiler = shutil.which(COMPILER)
    if compiler is None:
        return None, f"no C compiler ({COMPILER}) on PATH"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".loadgen-")
        os.close(handle)
    except OSError as error:
        return None, f"cannot write the build cache {target.parent}: {error}"
    try:
        done = subprocess.run(
            [compiler, *flags, "-o", temporary, str(SOURCE), *libs],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["(no message)"])[0]
            return None, f"{COMPILER} failed on {what}: {first}"
        os.replace(temporary, target)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"{COMPILER} could not build {what}: {error}"
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return target, ""


def _argv(binary: Path, config: dict, share: list[int], minimal: bool) -> list[str]:
    """One C process's command line: its connections are share (every `stride`-th index)."""
    stride = share[1] - share[0] if len(share) > 1 else 1
    argv = [str(binary), "--host", config["host"], "--port", str(config["port"])]
    argv += ["--connections", str(len(share)), "--first", str(share[0])]
    argv += ["--stride", str(stride), "--total", str(config["connections"])]
    argv += ["--size", str(config["size"]), "--duration", repr(config["duration"])]
    argv += ["--timeout", repr(config["timeout"]), "--seed", str(config["seed"])]
    if config.get("rate"):
        argv += ["--rate", repr(config["rate"])]
    if config.get("tls"):
        argv.append("--tls")
    if minimal:
        argv.append("--minimal")
    return argv


def _read_report(process: subprocess.Popen) -> dict:
    """A finished C process's report: its counts and its latency counts by µs."""
    report: dict = {"histogram": []}
    for line in process.stdout:
        key, _, value = line.rstrip("\n").partition(" ")
        if key == "end":
            break
        if key == "h":
            us, count = value.split()
            report["histogram"].append((int(us), int(count)))
        elif key == "first_error":
            report[key] = value
        elif key:
            report[key] = float(value) if "." in value else int(value)
    return report


def generate(
    binary: Path,
    config: dict,
    shares: list[list[int]],
    started: Callable[[], None],
    minimal: bool = False,
    prefix: tuple[str, ...] = (),
    ended: Callable[[], None] = lambda: None,
) -> list[dict]:
    """Run the load, one C process per share; `started()` is called as the load begins.

    Each process connects ("ready") before they all start together; each one's report (counts,
    CPU seconds over the load window, latency counts per µs) becomes the outcome the Python
    generator gives, histogram included, so ``workloads.echo.load.summarize`` merges either.

    `ended()` is called once every process has reported, while every connection is still
    open: a server's CPU read there leaves out its accept work (every connection has echoed a
    byte before "ready") and its teardown (the processes close only after it returns).
    `prefix` goes before each command line (``taskset -c N`` to pin it).

    Returns one report per process: requests, scheduled, corrupt, missing, failed, first_error,
    wall_s, cpu_s (its CPU over the load window only) and histogram [(µs, count), ...].
    """
    processes = [
        subprocess.Popen(
            [*prefix, *_argv(binary, config, share, minimal)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for share in shares
    ]
    try:
        for process in processes:
            line = process.stdout.readline()
            if line != "ready\n":
                process.wait(timeout=10)
                raise RuntimeError(
                    f"native load generator exited {process.returncode} before the load: "
                    + (process.stderr.read().strip() or line.strip())
                )
        started()
        for process in processes:
            process.stdin.write("go\n")
            process.stdin.flush()
        reports = [_read_report(process) for process in processes]
        ended()
        for process in processes:
            with contextlib.suppress(OSError):  # one that already exited reads no "close"
                process.stdin.write("close\n")
                process.stdin.flush()
        for process, report in zip(processes, reports, strict=True):
            if process.wait(timeout=30) != 0 or "requests" not in report:
                raise RuntimeError(
                    f"native load generator exited {process.returncode}: "
                    + process.stderr.read().strip()
                )
        return reports
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
            for stream in (process.stdin, process.stdout, process.stderr):
                with contextlib.suppress(OSError):
                    stream.close()


# The yardstick: this generator against a bare ping-pong client on the same server.


def _pinned(argv: list[str], core: int | None) -> list[str]:
    if core is None or shutil.which("taskset") is None:
        return argv
    return ["taskset", "-c", str(core), *argv]


def _prefix(core: int | None) -> tuple[str, ...]:
    return tuple(_pinned([], core))


def _cores() -> tuple[int | None, int | None]:
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return (usable[0], usable[1]) if len(usable) >= 2 else (None, None)


def compare(port: int, connections: int, size: int, duration: float, rounds: int, core) -> dict:
    """CPU µs per request: the full generator (as `workloads.echo.load` runs it) and --minimal.

    The full one runs through ``python -m workloads.echo.load --json``, the command the bench
    uses, and its figure is that record's ``load_cpu_s / requests``; the minimal one is the
    same C source with --minimal, timed the same way (getrusage over the load window).
    """
    binary, why = build()
    if binary is None:
        raise SystemExit(f"cannot build the native generator: {why}")
    full, minimal = [], []
    with tempfile.TemporaryDirectory(prefix="loadgen-compare-") as workdir:
        out = Path(workdir) / "load.json"
        for _ in range(rounds):
            argv = [sys.executable, "-m", "workloads.echo.load", "--port", str(port)]
            argv += ["--connections", str(connections), "--size", str(size)]
            argv += ["--duration", str(duration), "--json", str(out)]
            done = subprocess.run(_pinned(argv, core), capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"the load generator failed: {done.stdout}{done.stderr}")
            record = json.loads(out.read_text())
            if record["generator"] != "native":
                raise SystemExit(f"the native generator did not run: {record['generator_note']}")
            full.append(record["load_cpu_s"] / record["requests"] * 1e6)
            config = {
                "host": "127.0.0.1",
                "port": port,
                "connections": connections,
                "size": size,
                "duration": duration,
                "timeout": 10.0,
                "seed": 1,
            }
            shares = [list(range(connections))]
            (report,) = generate(binary, config, shares, lambda: None, True, _prefix(core))
            if report["corrupt"] or report["missing"] or report["failed"]:
                raise SystemExit(f"the minimal client failed: {report['first_error']}")
            minimal.append(report["cpu_s"] / report["requests"] * 1e6)
    return {"full_us": full, "minimal_us": minimal}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.echo.loadgen",
        description="Print the native load generator's CPU per request next to a minimal "
        "C epoll ping-pong client's, on the same echo server.",
    )
    parser.add_argument("--port", type=int, help="an echo server already running here")
    parser.add_argument(
        "--serve",
        metavar="ANCHOR",
        nargs="?",
        const="selectors-floor",
        help="start this anchor server (default selectors-floor) pinned to its own core",
    )
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--build-only", action="store_true", help="build, print the path, exit")
    args = parser.parse_args(argv)
    if args.build_only:
        binary, why = build()
        print(binary or f"not built: {why}")
        return 0 if binary else 1
    if (args.port is None) == (args.serve is None):
        parser.error("give --port of a running server, or --serve [ANCHOR]")
    server_core, load_core = _cores()
    server = None
    port = args.port
    if args.serve:
        command = [sys.executable, "-m", "workloads.echo.native", args.serve, "--port", "0"]
        server = subprocess.Popen(_pinned(command, server_core), stdout=subprocess.PIPE, text=True)
        port = int(server.stdout.readline().split()[-1].rsplit(":", 1)[1])
    try:
        result = compare(port, args.connections, args.size, args.duration, args.rounds, load_core)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=15)
    full, minimal = result["full_us"], result["minimal_us"]
    pinning = f"cores {server_core} (server) and {load_core} (client)" if load_core else "unpinned"
    print(
        f"{args.connections} connections x {args.size} B, {args.duration:g} s x {args.rounds} "
        f"rounds, {pinning}, {time.strftime('%Y-%m-%d %H:%M:%S')}"
    )
    print(f"  generator (every byte verified): {', '.join(f'{v:.2f}' for v in full)} µs/request")
    print(f"  minimal C ping-pong client:      {', '.join(f'{v:.2f}' for v in minimal)} µs/request")
    ratio = statistics.median(full) / statistics.median(minimal)
    print(
        f"  medians: {statistics.median(full):.2f} against {statistics.median(minimal):.2f} "
        f"µs/request: x{ratio:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
