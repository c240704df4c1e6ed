"""Instructions per echo request, by part of the server, counted under callgrind.

    python -m bench.measure.profile [--loop NAME ...] [--connections N] [--seconds A B]
        [--rate R] [--label TEXT] [--tree CHECKOUT] [--no-total] [--keep DIR] [--json FILE]

Why instructions: on a shared machine, CPU time per request moves with the load of the other
processes (caches, frequency, preemption); the number of instructions the server executes per
request does not. ``valgrind --tool=callgrind`` counts every user-space instruction the server
process executes (``Ir``), exactly. What it cannot see is Linux's own work inside the syscalls
(the TCP stack, the io_uring operations): that is the part ``python -m bench anatomy`` counts
in syscalls, and a loop that moves work into Linux (the completions loop: the recv and the send
happen inside ``io_uring_enter``) shows less here for it.

How one loop is counted (:func:`profile_loop`): the echo server runs under callgrind with
instrumentation off (``--instr-atstart=no``); one warm-up load runs uninstrumented; then
``callgrind_control -i on``, load A (the lab's load generator, ``workloads.echo.load``, closed
loop, N connections x 1 KiB, for A seconds), ``callgrind_control -d`` (a dump; counters start
again from zero), load B (B seconds), a second dump. Each load opens its N connections and
closes them, so both dumps hold the same connection set-up and teardown; the difference of the
two dumps over the difference of their request counts is the cost of a request alone:
``(Ir_B - Ir_A) / (requests_B - requests_A)``, per part likewise.

The parts. Python 3.12's ``-X perf`` gives each Python function its own small trampoline of
machine code (its address and name in ``/tmp/perf-PID.map``); ``--separate-callers=K`` makes
callgrind keep each function's cost apart per chain of its K nearest callers. So each counted
instruction has a chain of callers, and the nearest trampoline on it is the Python function
running (what ``perf report`` does with sampled stacks, here exact). A part is then:

- **ctypes**: instructions under a function of ``_ctypes`` or libffi (a foreign call's
  marshalling, ``string_at``, ``cast``, ``addressof``), whichever Python function called it;
- **task switch**: the generator machinery (``gen_send``, ``gen_throw``...) below the Python
  function that resumes a coroutine, plus the trap functions themselves (``traps.py``,
  ``task.py``): what one ``await`` crossing costs;
- **socket methods (C)**: the ``_socket`` module's C code (``sock.recv``, ``sock.send``,
  ``fileno``, ``gettimeout``): the user-space side of a socket call;
- **poller (C)**: the ``select`` module's C code (``epoll.poll``), the readiness loops' wait;
- otherwise the Python function's file: ``uring.py`` is **ring** (SQE writes, the enter, reaping
  CQEs), ``kernel.py`` **the turn** (the run loop and its helpers, with the I/O side the kernel
  calls: ``poller.py``, ``proactor.py``), ``api.py`` and
  ``buffers.py`` **socket calls** (the loop's ``recv``/``sendall`` and their completers),
  ``workloads/echo`` **protocol**; anything else **other**.

``-X perf`` costs instructions itself (with a frame evaluator installed, CPython no longer
inlines Python-to-Python calls, so each call goes through C), so each loop is also counted on
the bench's interpreter without it (``--split-python`` / ``--total-python``): the split is
``-X perf``'s, the total beside it is the plain interpreter's.

Under callgrind the server runs some fifty times slower, so the load generator always finds it
busy: every connection has a request waiting at each turn (the closed loop's saturated regime,
the largest batches per enter). Both loops are counted in that same regime. ``--rate R`` offers
a fixed load instead (the bench's paced measure, open loop): at a rate well below what the
server sustains under callgrind, a turn serves one request or a few, and what a loop pays per
turn (an enter, a poll) is paid by fewer requests.

Results go to ``reports/results/profile.json`` (``--json``): per loop, the counts of both dumps,
instructions per request in total and by part, and the Python functions costing most.
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

from bench.render.instructions import FILE
from machine.interpreters import find

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "reports" / "results" / FILE  # bench.render.instructions renders it
SPLIT_PYTHON = "3.12"  # -X perf is 3.12+: found as machine.interpreters.find finds it
STOP_GRACE = 20.0  # seconds a server has to end after its dumps, then it is killed
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


def _load(port: int, connections: int, seconds: float, out: Path, rate: int | None = None) -> int:
    argv = [sys.executable, "-m", "workloads.echo.load", "--port", str(port)]
    argv += ["--connections", str(connections), "--size", "1024", "--duration", str(seconds)]
    argv += ["--json", str(out), "--timeout", "120"]
    if rate:
        argv += ["--rate", str(rate)]
    subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    record = json.loads(out.read_text())
    if not record.get("ok"):
        raise RuntimeError(f"load generator: {record.get('first_error')}")
    return record["requests"]


def _control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, stdout=subprocess.DEVNULL)


def profile_loop(
    loop: str,
    python: str,
    split: bool,
    connections: int,
    seconds: tuple[float, float],
    keep: Path | None = None,
    tree: Path = ROOT,
    rate: int | None = None,
) -> dict:
    """Count one loop's echo server (see the module docstring); its figures per request."""
    with tempfile.TemporaryDirectory(prefix="profile-") as tmp:
        work = Path(tmp)
        argv = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
        argv += [f"--callgrind-out-file={work}/cg.out"]
        if split:
            argv += [f"--separate-callers={CALLERS}"]
        argv += [python, *(["-X", "perf"] if split else [])]
        argv += ["-m", "workloads.echo", "--loop", loop, "--port", "0"]
        with open(work / "server.err", "w") as err:
            server = subprocess.Popen(argv, cwd=tree, stdout=subprocess.PIPE, stderr=err)
            try:
                line = server.stdout.readline().decode()
                match = re.search(r":(\d+) .*pid (\d+)", line)
                if not match:
                    raise RuntimeError(f"server did not start: {line!r} {_tail(work)}")
                port, pid = int(match[1]), int(match[2])
                _load(port, connections, 1.0, work / "warm.json")
                _control("-i", "on", str(pid))
                requests = []
                for name, duration in zip("AB", seconds, strict=True):
                    record = work / f"{name}.json"
                    requests.append(_load(port, connections, duration, record, rate))
                    _control("-d", name, str(pid))
                functions = read_perf_map(pid) if split else {}
                # The dumps are written: the server may go. Under valgrind a signal does not
                # interrupt a wait in io_uring_enter (the completions loop's would end only at
                # its next completion), so a server still there after STOP_GRACE is killed.
                server.send_signal(signal.SIGINT)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    server.wait(timeout=STOP_GRACE)
            finally:
                if server.poll() is None:
                    server.kill()
        dumps = sorted(work.glob("cg.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
        if len(dumps) < 2:
            raise RuntimeError(f"callgrind wrote {len(dumps)} dumps: {_tail(work)}")
        counted = [attribute(*read_dump(path), functions) for path in dumps[:2]]
        called = [read_calls(path, functions) for path in dumps[:2]]
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            tag = f"{loop}.{'split' if split else 'total'}"
            for path in dumps[:2]:
                shutil.copy(path, keep / f"{tag}.{path.name}")
            (keep / f"{tag}.perf.map").write_text(json.dumps(functions))
    served = requests[1] - requests[0]
    if served <= 0:
        raise RuntimeError(f"load B served no more requests than load A: {requests}")
    totals = [sum(parts.values()) for parts, _ in counted]
    entry = {
        "python": python,
        "split": split,
        "connections": connections,
        "seconds": list(seconds),
        "rate": rate,
        "requests": requests,
        "instructions": totals,
        "per_request": (totals[1] - totals[0]) / served,
    }
    if split:
        (parts_a, fn_a), (parts_b, fn_b) = counted
        entry["parts"] = {part: (parts_b[part] - parts_a[part]) / served for part in PARTS}
        per_fn = {name: (fn_b[name] - fn_a.get(name, 0)) / served for name in fn_b}
        entry["functions"] = dict(sorted(per_fn.items(), key=lambda kv: -kv[1])[:25])
        calls_a, calls_b = called
        entry["calls"] = {
            name: (calls_b[name] - calls_a.get(name, 0)) / served
            for name in entry["functions"]
            if calls_b.get(name)
        }
    return entry


def _tail(work: Path) -> str:
    err = work / "server.err"
    return err.read_text(errors="replace")[-600:] if err.exists() else ""


# ---------------------------------------------------------------------------- the CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.measure.profile", description=__doc__)
    parser.add_argument("--loop", action="append", help="default: traps and completions")
    parser.add_argument("--connections", type=int, default=20)
    parser.add_argument(
        "--rate",
        type=int,
        help="offered requests/s (open loop, the bench's paced measure); default: closed loop",
    )
    parser.add_argument("--seconds", type=float, nargs=2, default=(0.3, 8.0), metavar=("A", "B"))
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
            tuple(args.seconds),
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
                tuple(args.seconds),
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
    done = subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=tree, capture_output=True, text=True
    )
    return done.stdout.strip()


def _line(row: dict) -> str:
    split = row["split"]
    text = f"{split['per_request']:,.0f} Ir/request under -X perf"
    if "total" in row:
        text += f", {row['total']['per_request']:,.0f} without"
    parts = ", ".join(f"{part} {value:,.0f}" for part, value in split["parts"].items() if value)
    return f"{text}; {parts}"


if __name__ == "__main__":
    raise SystemExit(main())
