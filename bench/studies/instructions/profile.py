"""Instructions per echo request, by part of the server, counted under callgrind.

    python -m bench.studies.instructions.profile [--loop NAME ...] [--connections N] [--seconds S]
        [--rate R] [--label TEXT] [--tree CHECKOUT] [--no-total] [--keep DIR] [--json FILE]

An instruction count does not move with the load of a shared machine, as CPU time does. How
one loop is counted, what the parts are, what ``-X perf`` costs and what callgrind's slowness
does to the regime: this folder's README. Results go to
``reports/results/profile.json`` (``--json``).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench.studies.instructions import PROFILE_FILE
from machine.environment import CODE_DIRS, ROOT
from machine.interpreters import find
from workloads.echo import loadgen
from workloads.echo.native import SERVERS

RESULTS = ROOT / "reports" / "results" / PROFILE_FILE  # the instructions study's render.py reads it
SPLIT_PYTHON = "3.12"  # -X perf is 3.12+: found as machine.interpreters.find finds it
STOP_GRACE = 20.0  # seconds a server has to end after its dumps, then it is killed
WARM_S = 1.0  # the uninstrumented warm-up load before the counted window
# How a count was taken, stored with it: a count is compared only with counts taken the same way.
METHOD = "window"  # the load window alone, every connection open and primed (``_window``)
CALLERS = 12  # --separate-callers: deep enough that every instruction's chain reaches Python
PARTS = (
    "ring",
    "ctypes",
    "poller (C)",
    "socket methods (C)",
    "the turn",
    "task switch",
    "socket calls",
    "protocol",
    "other",
)
# C functions (base names) whose code is the coroutine switch itself.
SWITCH_C = {
    "gen_send",
    "gen_send_ex",
    "gen_send_ex2",
    "gen_throw",
    "_gen_throw",
    "gen_iternext",
    "PyIter_Send",
    "gen_close",
    "_PyGen_SetStopIterationValue",
    "_PyGen_FetchStopIterationValue",
}
# Python files (path endings) and the part their functions' own instructions belong to.
FILE_PARTS = (
    ("/uring.py", "ring"),
    ("/kernel.py", "the turn"),
    ("/poller.py", "the turn"),  # the kernels' I/O sides: stage 1's wait and the I/O traps
    ("/proactor.py", "the turn"),
    ("/traps.py", "task switch"),
    ("/task.py", "task switch"),
    ("/api.py", "socket calls"),
    ("/buffers.py", "socket calls"),
    ("workloads/echo/", "protocol"),
)
BEFORE_COUNTING = "Loop._loop:kernel.py (entered before counting began)"
TOO_DEEP = f"(deeper than {CALLERS} callers)"
_TRAMPOLINE = re.compile(r"^0x[0-9a-f]+$")


# ---------------------------------------------------------------------------- reading dumps


def read_dump(path: Path) -> tuple[dict[str, int], dict[str, str]]:
    """A callgrind dump's self cost (Ir) per function context, and each function's object.

    The format (callgrind's docs, "Callgrind Format Specification"): ``fn=(id) name`` opens a
    function (``(id)`` alone reuses a name), ``ob=`` its object; a cost line is positions then
    the cost; the cost line right after ``calls=`` is that call's inclusive cost, not the
    function's own, and is skipped here (the callee's own lines count it).
    """
    names: dict[str, dict[str, str]] = {"fn": {}, "ob": {}, "cfn": {}, "cob": {}}
    cost: Counter = Counter()
    objects: dict[str, str] = {}
    fn, ob = "", ""
    skip_next = False
    with open(path, errors="replace") as lines:
        for line in lines:
            head = line[:1]
            if head.isdigit() or head in "+-*":
                if skip_next:
                    skip_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    cost[fn] += int(parts[-1])
                continue
            if line.startswith("calls="):
                skip_next = True
                continue
            key, _, value = line.rstrip("\n").partition("=")
            if key in ("fn", "ob", "cfn", "cob"):
                table = names["fn" if key in ("fn", "cfn") else "ob"]
                match = re.match(r"\((\d+)\)(?: (.*))?$", value)
                if match:
                    ident, name = match.groups()
                    if name is not None:
                        table[ident] = name
                    value = table.get(ident, value)
                if key == "fn":
                    fn = value
                    objects.setdefault(fn.split("'", 1)[0], ob)
                elif key == "ob":
                    ob = value
    return dict(cost), objects


def read_calls(path: Path, functions: dict[int, str]) -> Counter:
    """How many times each Python function of ``functions`` was called in a dump: the
    ``calls=`` counts of the calls into its trampoline. A function's instructions over its
    calls is its cost per call, which does not depend on how many calls a request took."""
    calls: Counter = Counter()
    names: dict[str, str] = {}
    callee = None
    with open(path, errors="replace") as lines:
        for line in lines:
            if line.startswith(("fn=", "cfn=")):
                match = re.match(r"c?fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
                if match:
                    ident, name = match.groups()
                    if name is not None:
                        names[ident] = name
                    callee = names.get(ident) if line.startswith("cfn=") else None
            elif line.startswith("calls=") and callee:
                base = callee.split("'", 1)[0]
                if _TRAMPOLINE.match(base) and int(base, 16) in functions:
                    calls[functions[int(base, 16)]] += int(line[6:].split()[0])
    return calls


def read_perf_map(pid: int) -> dict[int, str]:
    """``/tmp/perf-PID.map``: trampoline address -> ``qualname:file`` of its Python function."""
    functions = {}
    path = Path(f"/tmp/perf-{pid}.map")
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            address, _, name = line.split(" ", 2)
            functions[int(address, 16)] = name.removeprefix("py::")
    return functions


def attribute(
    cost: dict[str, int], objects: dict[str, str], functions: dict[int, str]
) -> tuple[Counter, Counter]:
    """Instructions by part and by Python function (its own, with the C it calls)."""
    parts: Counter = Counter()
    by_function: Counter = Counter()
    for context, instructions in cost.items():
        chain = context.split("'")
        python, below = None, []
        for name in chain:
            if _TRAMPOLINE.match(name) and int(name, 16) in functions:
                python = functions[int(name, 16)]
                break
            below.append(name)
        if python is None:
            # Counting began inside the run loop (callgrind_control -i on), so the frames
            # entered before it have no trampoline on record: a chain that ends short of
            # CALLERS without one is the run loop's own code. A chain as long as CALLERS
            # without one went deeper than callgrind kept.
            python = BEFORE_COUNTING if len(chain) <= CALLERS else TOO_DEEP
        part = None
        for name in below:
            obj = objects.get(name, "")
            if "_ctypes" in obj or "libffi" in obj:
                part = "ctypes"
                break
        if part is None and any(name in SWITCH_C for name in below):
            part = "task switch"
        if part is None:
            for name in below:
                obj = objects.get(name, "")
                if "/_socket" in obj:
                    part = "socket methods (C)"
                    break
                if "/select." in obj:
                    part = "poller (C)"
                    break
        if part is None:
            part = "other"
            for ending, file_part in FILE_PARTS:
                if python is not None and ending in python:
                    part = file_part
                    break
        parts[part] += instructions
        by_function[python or "(no Python function)"] += instructions
    return parts, by_function


# ---------------------------------------------------------------------------- running


def _interpreter(version: str) -> str:

    path = find(version)
    if path is None:
        raise SystemExit(f"profile: Python {version} not found (-X perf needs 3.12+)")
    return path


def _window(port: int, connections: int, seconds: float, rate: int | None, pid: int | None) -> int:
    """The counted load: the C generator connects and primes every connection, a dump empties
    the counters, the load runs, a second dump holds its window alone; the requests it served.

    The window is the bench's own (workloads/echo/loadgen.c's protocol): no accept, no
    connection's first byte and no close is in it, so nothing but the requests and the turns
    that served them is counted. Counting the difference of two whole loads instead (each
    opening and closing its connections) left the set-up's own variation in the figure: at
    200 requests/s one row's count moved by a sixth from one run to the next."""
    binary, why = loadgen.build()
    if binary is None:
        raise RuntimeError(f"instruction counts need the C load generator: {why}")
    config = {
        "host": "127.0.0.1",
        "port": port,
        "connections": connections,
        "size": 1024,
        "duration": seconds,
        "timeout": 120.0,
        "seed": 1,
        "rate": rate,
        "tls": False,
    }
    # pid None: a load that is not counted (the warm-up), with no dump at its edges.
    started = ended = lambda: None
    if pid is not None:
        started = lambda: _control("-d", "before", str(pid))  # noqa: E731
        ended = lambda: _control("-d", "window", str(pid))  # noqa: E731
    report = loadgen.generate(
        binary, config, [list(range(connections))], started=started, ended=ended
    )[0]
    lost = {k: report[k] for k in ("corrupt", "missing", "failed") if report[k]}
    if lost:
        raise RuntimeError(f"load generator: {lost} {report.get('first_error', '')}")
    return report["requests"]


def _control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, stdout=subprocess.DEVNULL)


def callgrind_count(
    server: list[str],
    python: str,
    connections: int,
    seconds: float,
    rate: int | None = None,
    split: bool = False,
    tree: Path = ROOT,
    keep: tuple[Path, str] | None = None,
) -> tuple[int, Path, dict[int, str], Path]:
    """Count one echo server (``python -m ...`` with ``server`` as its arguments) under
    callgrind (this folder's README): the requests of the counted window, the
    window's dump, the Python functions' trampolines (with ``split``), and the folder holding
    the dump, which the caller removes once it has read it."""
    work = Path(tempfile.mkdtemp(prefix="profile-"))
    argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
    argv += [f"--callgrind-out-file={work}/cg.out"]
    if split:
        argv += [f"--separate-callers={CALLERS}"]
    argv += [python, *(["-X", "perf"] if split else []), *server]
    with open(work / "server.err", "w") as err:
        process = subprocess.Popen(argv, cwd=tree, stdout=subprocess.PIPE, stderr=err)
        try:
            line = process.stdout.readline().decode()
            match = re.search(r"listening on \S+:(\d+)", line)
            if not match:
                raise RuntimeError(f"server did not start: {line!r} {_tail(work)}")
            # valgrind runs the server in its own process: the pid it prints, where it does.
            port, said = int(match[1]), re.search(r"pid (\d+)", line)
            pid = int(said[1]) if said else process.pid
            _window(port, connections, WARM_S, None, None)  # the warm-up, uninstrumented
            # On from here, so callgrind follows every call the window's code makes; the
            # dump at the window's start empties the counters.
            _control("-i", "on", str(pid))
            requests = _window(port, connections, seconds, rate, pid)
            functions = read_perf_map(pid) if split else {}
            # The dumps are written: the server may go. Under valgrind a signal does not
            # interrupt a wait in io_uring_enter (the completions loop's would end only at
            # its next completion), so a server still there after STOP_GRACE is killed.
            process.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=STOP_GRACE)
        finally:
            if process.poll() is None:
                process.kill()
    dumps = sorted(work.glob("cg.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    if len(dumps) < 2:
        raise RuntimeError(f"callgrind wrote {len(dumps)} dumps: {_tail(work)}")
    window = dumps[1]
    if keep is not None:
        folder, tag = keep
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(window, folder / f"{tag}.{window.name}")
        (folder / f"{tag}.perf.map").write_text(json.dumps(functions))
    return requests, window, functions, work


def per_request(requests: int, total: float) -> float:
    """A request's own instructions: the window's over the requests it served."""
    if requests <= 0:
        raise RuntimeError("the counted window served no request")
    return total / requests


def profile_loop(
    loop: str,
    python: str,
    split: bool,
    connections: int,
    seconds: float,
    keep: Path | None = None,
    tree: Path = ROOT,
    rate: int | None = None,
) -> dict:
    """Count one loop's echo server, or an anchor's (``workloads.echo.native``), by name (this
    folder's README); its figures per request."""
    if loop in SERVERS:  # an anchor: the peer a home-made loop is held against
        server = ["-m", "workloads.echo.native", loop, "--port", "0"]
    else:
        server = ["-m", "workloads.echo", "--loop", loop, "--port", "0"]
    tag = f"{loop}.{'split' if split else 'total'}"
    requests, window, functions, work = callgrind_count(
        server, python, connections, seconds, rate, split, tree, keep and (keep, tag)
    )
    try:
        parts, by_function = attribute(*read_dump(window), functions)
        calls = read_calls(window, functions)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = sum(parts.values())
    entry = {
        "python": python,
        "split": split,
        "connections": connections,
        "seconds": seconds,
        "rate": rate,
        "method": METHOD,
        "requests": requests,
        "instructions": total,
        "per_request": per_request(requests, total),
    }
    if split:
        entry["parts"] = {part: parts[part] / requests for part in PARTS}
        per_fn = {name: count / requests for name, count in by_function.items()}
        entry["functions"] = dict(sorted(per_fn.items(), key=lambda kv: -kv[1])[:25])
        entry["calls"] = {
            name: calls[name] / requests for name in entry["functions"] if calls.get(name)
        }
    return entry


def _tail(work: Path) -> str:
    err = work / "server.err"
    return err.read_text(errors="replace")[-600:] if err.exists() else ""


# ---------------------------------------------------------------------------- the CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.studies.instructions.profile", description=__doc__
    )
    parser.add_argument(
        "--loop",
        action="append",
        help="a loop, or an anchor server (handlers-cookbook); default: traps and completions",
    )
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument(
        "--rate",
        type=int,
        help="offered requests/s (open loop, the bench's paced measure); default: closed loop",
    )
    parser.add_argument(
        "--seconds", type=float, default=8.0, help="the counted window's length (default 8)"
    )
    parser.add_argument("--split-python", default=SPLIT_PYTHON, help="a version (3.12+)")
    parser.add_argument("--total-python", default=sys.executable, help="a path")
    parser.add_argument("--no-total", action="store_true", help="only the -X perf split")
    parser.add_argument("--label", default="", help="stored under this name beside the loop's")
    parser.add_argument("--json", type=Path, default=RESULTS)
    parser.add_argument(
        "--tree", type=Path, default=ROOT, help="the lab checkout whose server is counted"
    )
    parser.add_argument("--keep", type=Path, help="copy the callgrind dumps into this folder")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("profile: valgrind is missing (apt-get install valgrind)", file=sys.stderr)
        return 1
    stored = json.loads(args.json.read_text()) if args.json.exists() else {}
    stored.setdefault("rows", {})
    for loop in args.loop or ["traps", "completions"]:
        key = loop + (f" ({args.label})" if args.label else "")
        split = profile_loop(
            loop,
            _interpreter(args.split_python),
            True,
            args.connections,
            args.seconds,
            args.keep,
            args.tree,
            args.rate,
        )
        row = {"split": split}
        if not args.no_total:
            row["total"] = profile_loop(
                loop,
                args.total_python,
                False,
                args.connections,
                args.seconds,
                None,
                args.tree,
                args.rate,
            )
        row["commit"] = _commit(args.tree)
        row["date"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        stored["rows"][key] = row
        print(f"profile: {key}: {_line(row)}")
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    return 0


def _commit(tree: Path) -> str:
    """HEAD's short hash in tree, "-dirty" where its code differs from HEAD: the environment
    record's test (the folders of ``machine.environment.CODE_DIRS``), so the results the bench
    itself writes under reports/ are not counted as changed code."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tree, capture_output=True, text=True).stdout

    changed = git("status", "--porcelain", "--", *CODE_DIRS).strip()
    return git("rev-parse", "--short=7", "HEAD").strip() + ("-dirty" if changed else "")


def _line(row: dict) -> str:
    split = row["split"]
    text = f"{split['per_request']:,.0f} Ir/request under -X perf"
    if "total" in row:
        text += f", {row['total']['per_request']:,.0f} without"
    parts = ", ".join(f"{part} {value:,.0f}" for part, value in split["parts"].items() if value)
    return f"{text}; {parts}"


if __name__ == "__main__":
    raise SystemExit(main())
