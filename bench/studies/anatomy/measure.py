"""Cost anatomy of echo: where each request's microseconds go, counted in an untimed repetition.

For every echo row at 1 KiB x 100 connections, one extra repetition (never mixed with the timed
ones) records per request served its syscalls by kind, for a server that enters io_uring its
entries per enter, its context switches and its CPU, at the fixed offered load
(``python -m bench anatomy``, :func:`load_params`) or in the closed loop (``--closed-loop``,
:func:`closed_params`), each point stored in a file of its own through :mod:`bench.store` and
rendered by
:mod:`bench.studies.anatomy.render`. The two points, what is counted, the two counters (perf,
strace) and why no function-level profile: this folder's README.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import select
import shutil
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench import registry, store
from bench.fingerprint import fingerprint
from bench.headline import HEADLINE_POINT, PACED, offered_rate, server_rows
from bench.plan import Row
from bench.procs import ChildFailed, Cores
from bench.studies.anatomy import FILES
from bench.studies.anatomy.render import load_anatomy
from bench.studies.echo.measure import Serving
from machine import environment

SIZE, CONNECTIONS = HEADLINE_POINT["size"], HEADLINE_POINT["connections"]  # echo's headline point
# Seconds of warm-up load, of the plain window (long: the kernel splits CPU time into user and
# system by 10 ms ticks, so the window must hold tens of ticks of even the cheapest server's
# CPU: at the fixed load a quarter of a core, 50 ticks in 2 s), and of the counted window
# (counts are exact: a shorter window serves).
WARMUP_S, PLAIN_S, COUNTED_S = 0.3, 2.0, 1.0
# The stored closed-loop point's "measure" (the fixed load's is PACED): no rate, so the load
# generator runs closed loop (bench.studies.echo.measure.load_argv passes --rate only where
# one is given).
CLOSED_LOOP = "closed"
INSTALL_HINT = "install strace (`apt-get install strace`) or perf (`apt-get install linux-perf`)"

# Syscall kinds, by name. Anything counted but not listed is "other" (accept4, close, ...).
KINDS = {
    "wait": ("epoll_wait", "epoll_pwait", "epoll_pwait2", "select", "pselect6", "poll", "ppoll"),
    "recv": ("recvfrom", "recvmsg", "recvmmsg", "read", "readv"),
    "send": ("sendto", "sendmsg", "sendmmsg", "write", "writev"),
    "epoll_ctl": ("epoll_ctl",),
    "io_uring_enter": ("io_uring_enter",),
}
EAGAIN = 11  # errno EAGAIN (== EWOULDBLOCK) on Linux
COLUMNS = (
    "wait",
    "recv",
    "recv_eagain",
    "send",
    "epoll_ctl",
    "io_uring_enter",
    "other",
    "total",
)


@dataclass
class Counts:
    """Syscalls seen, by name, and how many of each failed with EAGAIN; the SQEs that
    ``io_uring_enter`` calls returned as submitted (strace only, else None), and the io_uring
    rings' own counts over the window (see :func:`ring_counts`), if the server has any."""

    calls: Counter = field(default_factory=Counter)
    eagain: Counter = field(default_factory=Counter)
    submitted: int | None = None
    waiting: int | None = None  # enters asking for a completion (min_complete > 0): strace only
    ring: dict[str, int] | None = None

    def per_enter(self) -> dict | None:
        """Entries per ``io_uring_enter``, or None where the server entered no ring.

        ``submitted`` is the sum of the enters' return values where the counter saw them
        (strace), else the rings' consumed SQEs (``SqHead``); ``reaped`` is the CQEs the loop
        moved its ``CqHead`` past. Both are per enter over the counted window.
        """
        enters = self.calls["io_uring_enter"]
        if not enters:
            return None
        ring = self.ring or {}
        submitted = self.submitted if self.submitted is not None else ring.get("sq_consumed")
        figures = {
            "enters": enters,
            "submitted_from": "return values" if self.submitted is not None else "ring",
            "submitted": submitted,
            "waiting": self.waiting,
            **ring,
            "submitted_per_enter": None if submitted is None else submitted / enters,
            "reaped_per_enter": ring["cq_reaped"] / enters if "cq_reaped" in ring else None,
        }
        return figures

    def per_request(self, requests: int) -> dict[str, float]:
        """Calls per request by kind (see KINDS), with failed receives and the total."""
        kinds = {kind: sum(self.calls[name] for name in names) for kind, names in KINDS.items()}
        total = sum(self.calls.values())
        kinds["recv_eagain"] = sum(self.eagain[name] for name in KINDS["recv"])
        kinds["other"] = total - sum(kinds[kind] for kind in KINDS)
        kinds["total"] = total
        return {kind: kinds[kind] / requests for kind in COLUMNS}


# ---------------------------------------------------------------------------- strace

# One line of `strace -f -o FILE`: an optional pid, then a call, an unfinished call or the
# resumption of one; a finished call ends with "= RESULT [ERRNAME (text)]".
_STRACE_LINE = re.compile(
    r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?(?:<\.\.\. (?P<resumed>\w+) resumed>|(?P<name>\w+)\()"
)
_ENTER_MIN_COMPLETE = re.compile(r"io_uring_enter\(\d+, \d+, (\d+),")
_STRACE_RESULT = re.compile(r"=\s+(-?\d+|\?)(?:\s+(E[A-Z0-9]+))?(?:\s+\([^)]*\))?\s*$")


def parse_strace(text: str) -> Counts:
    """Count the calls of an ``strace -f -o`` log, and those that failed with EAGAIN.

    A call interrupted by another thread's is logged twice (``name(... <unfinished ...>`` and
    ``<... name resumed> ...) = R``): it is counted once, where it starts, and its result is
    read where it resumes. Signals and exits (``---``, ``+++``) are not calls.
    ``io_uring_enter``'s non-negative results (the SQEs it submitted) are summed, and its calls
    that asked for a completion (``min_complete``, the third argument, above 0) counted: the
    rest only submitted.
    """
    counts = Counts()
    submitted = waiting = 0
    for line in text.splitlines():
        match = _STRACE_LINE.match(line)
        if not match:
            continue
        if match["name"]:
            counts.calls[match["name"]] += 1
            if match["name"] == "io_uring_enter":
                waits = _ENTER_MIN_COMPLETE.search(line)
                waiting += bool(waits and int(waits[1]))
            if line.endswith("<unfinished ...>"):
                continue
        name = match["name"] or match["resumed"]
        result = _STRACE_RESULT.search(line)
        if result and result[2] in ("EAGAIN", "EWOULDBLOCK"):
            counts.eagain[name] += 1
        if name == "io_uring_enter" and result and result[1].isdigit():
            submitted += int(result[1])
    if counts.calls["io_uring_enter"]:
        counts.submitted, counts.waiting = submitted, waiting
    return counts


# ---------------------------------------------------------------------------- perf

_TRACEFS = (Path("/sys/kernel/tracing/events/syscalls"), Path("/sys/kernel/debug/tracing/events"))


def _traced_syscalls() -> list[str]:
    """The syscalls of KINDS that this kernel has tracepoints for."""
    for root in _TRACEFS:
        if root.name != "syscalls":
            root = root / "syscalls"
        if root.is_dir():
            return [
                name
                for names in KINDS.values()
                for name in names
                if (root / f"sys_enter_{name}").is_dir()
            ]
    return []


def perf_argv(pid: int, out: Path) -> list[str]:
    """``perf stat`` counting KINDS' syscalls, EAGAIN exits of receives, and every syscall."""
    names = _traced_syscalls()
    argv = ["perf", "stat", "-x,", "-o", str(out), "-p", str(pid)]
    argv += ["-e", ",".join(f"syscalls:sys_enter_{name}" for name in names)]
    for name in names:
        if name in KINDS["recv"]:
            argv += ["-e", f"syscalls:sys_exit_{name}", "--filter", f"ret == -{EAGAIN}"]
    return [*argv, "-e", "raw_syscalls:sys_enter"]


def parse_perf(text: str) -> Counts:
    """Counts from ``perf stat -x,`` output of :func:`perf_argv`'s events.

    ``raw_syscalls:sys_enter`` (every syscall) becomes the calls not named, under "other".
    """
    counts = Counts()
    every = 0
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 3 or not fields[0].strip().isdigit():
            continue  # comments, and "<not counted>" / "<not supported>" events
        value, event = int(fields[0]), fields[2].strip()
        if event == "raw_syscalls:sys_enter":
            every = value
        elif event.startswith("syscalls:sys_enter_"):
            counts.calls[event.removeprefix("syscalls:sys_enter_")] += value
        elif event.startswith("syscalls:sys_exit_"):
            counts.eagain[event.removeprefix("syscalls:sys_exit_")] += value
    named = sum(counts.calls.values())
    if every > named:
        counts.calls["(other)"] = every - named
    return counts


# ---------------------------------------------------------------------------- io_uring rings

_RING_FIELDS = ("SqHead", "CqTail", "CqHead")


def ring_states(pid: int) -> dict[str, dict[str, int]]:
    """The io_uring rings a process holds, by inode: their ``SqHead``, ``CqTail`` and
    ``CqHead`` as ``/proc/PID/fdinfo`` shows them (32-bit counters that wrap). Empty if it
    holds none. One ring may sit behind several fds (Python's ``mmap`` dups the fd it maps):
    it is read once."""
    states = {}
    with contextlib.suppress(OSError):  # a process that just ended
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:[io_uring]":
                    continue
                text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
            except OSError:  # closed meanwhile
                continue
            fields = dict(re.findall(r"^(\w+):\s*(\d+)$", text, re.MULTILINE))
            if all(name in fields for name in ("ino", *_RING_FIELDS)):
                states[fields["ino"]] = {name: int(fields[name]) for name in _RING_FIELDS}
    return states


def ring_counts(before: dict, after: dict) -> dict[str, int] | None:
    """SQEs consumed, CQEs posted and CQEs reaped between two :func:`ring_states`, summed over
    the rings present at both readings; None if there were none."""
    rings = before.keys() & after.keys()
    if not rings:
        return None

    def delta(name: str) -> int:
        return sum((after[ino][name] - before[ino][name]) % (1 << 32) for ino in rings)

    return {"sq_consumed": delta("SqHead"), "cq_posted": delta("CqTail"),
            "cq_reaped": delta("CqHead")}  # fmt: skip


# ---------------------------------------------------------------------------- counting


def _works(argv: list[str]) -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def available_counter(prefer: str | None = None) -> tuple[str | None, str]:
    """The counter that works here ("perf" or "strace", or None) and why the others do not."""
    reasons = []
    for tool in [prefer] if prefer else ["perf", "strace"]:
        if shutil.which(tool) is None:
            reasons.append(f"{tool} is not installed")
        elif tool == "perf" and not _traced_syscalls():
            reasons.append("perf cannot read syscall tracepoints here (no tracefs access)")
        elif tool == "perf" and not _works(
            ["perf", "stat", "-e", "raw_syscalls:sys_enter", "true"]
        ):
            reasons.append("perf stat cannot count syscall tracepoints here (permissions?)")
        elif tool == "strace" and not _works(["strace", "-f", "-qq", "-o", os.devnull, "true"]):
            reasons.append("strace cannot trace here (ptrace not permitted?)")
        else:
            return tool, ""
    return None, "; ".join(reasons) + f": {INSTALL_HINT}"


class Counting:
    """Count a running process's syscalls while the ``with`` block runs."""

    def __init__(self, tool: str, pid: int, workdir: Path) -> None:
        self.tool = tool
        self.out = workdir / f"syscalls.{tool}"
        if tool == "perf":
            argv = perf_argv(pid, self.out)
        else:  # every thread, every call, to a file parsed afterwards
            argv = ["strace", "-f", "-o", str(self.out), "-p", str(pid)]
        self.argv = argv
        self.pid = pid
        self.counts: Counts | None = None

    def __enter__(self) -> Counting:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if self.tool == "strace":  # it says "Process N attached" once the server is traced
            ready, _, _ = select.select([self.proc.stderr], [], [], 10)
            said = self.proc.stderr.readline().decode(errors="replace") if ready else ""
            if "attached" not in said:
                self.proc.kill()
                raise RuntimeError(f"strace did not attach: {said.strip() or 'no answer'}")
        else:  # perf says nothing until it ends: give it time to set its counters up
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(0.5)
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.tool} ended at once: {self.proc.stderr.read().decode()}")
        self.rings = ring_states(self.pid)  # once the counter counts: the same window
        return self

    def __exit__(self, *exc_info) -> None:
        rings = ring_states(self.pid)  # before the counter stops
        self.proc.send_signal(signal.SIGINT)  # both detach and write what they have
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        text = self.out.read_text(errors="replace") if self.out.exists() else ""
        if not text:
            raise RuntimeError(f"{self.tool} wrote nothing: {err.decode(errors='replace')}")
        self.counts = parse_perf(text) if self.tool == "perf" else parse_strace(text)
        self.counts.ring = ring_counts(self.rings, rings)


def ticks(pid: int) -> tuple[int, int]:
    """A live process's user and system ticks so far, ended threads included (the kernel
    samples which of the two a tick lands in: a ratio, not a clock)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def user_system(before: tuple, after: tuple, seconds: float) -> tuple[float, float]:
    """`seconds` of CPU split into user and system by the ticks between two ticks() readings.

    The seconds are the load generator's exact reading of the server over its window (every
    connection open, so a thread per connection is still there to be read)."""
    user, system = after[0] - before[0], after[1] - before[1]
    share = user / (user + system) if user + system else 0.0
    return seconds * share, seconds * (1 - share)


# ---------------------------------------------------------------------------- one row


def load_params(results: Path | None = None) -> dict:
    """The load of the echo bench's fixed-offered-load point at SIZE x CONNECTIONS, at the rate
    the echo workload declares there (the same in every session; `results` is not read)."""

    rate = offered_rate(SIZE, CONNECTIONS)
    return {"size": SIZE, "connections": CONNECTIONS, "measure": PACED, "rate": rate}


def closed_params() -> dict:
    """The load of the echo bench's closed-loop point at SIZE x CONNECTIONS: no rate, so each
    connection sends its next request as soon as its echo is back (the bench's own closed-loop
    point is the same size and connections without ``measure``; here ``measure`` only names
    the point in the stored file)."""
    return {"size": SIZE, "connections": CONNECTIONS, "measure": CLOSED_LOOP}


def point_params(closed: bool, results: Path | None = None) -> dict:
    """The load of the point measured: the closed loop, or the fixed offered load."""
    return closed_params() if closed else load_params(results)


def measure_row(row: Row, tool: str, cores, workdir: Path, params: dict) -> dict:
    """One untimed repetition: fresh server, warm-up, a plain window, then a counted window."""
    with Serving(row, params, cores, workdir) as server:
        server.load("warm-up", WARMUP_S)
        before = ticks(server.pid)
        plain = server.load("plain", PLAIN_S)
        user, system = user_system(before, ticks(server.pid), plain["server_cpu_s"])
        with Counting(tool, server.pid, workdir) as counting:
            counted = server.load("counted", COUNTED_S)
    served = plain["requests"]
    return {
        "label": row.label if not row.anchor else row.variant,
        "kind": row.kind,
        "requests_plain": served,
        "user_us": user / served * 1e6,
        "system_us": system / served * 1e6,
        # Over the plain window, where no tracer stops the threads (ptrace would add its own).
        "switches": {
            kind: plain[f"server_switches_{kind}"] / served for kind in ("voluntary", "involuntary")
        },
        "requests_counted": counted["requests"],
        "syscalls": counting.counts.per_request(counted["requests"]),
        **({"uring": uring} if (uring := counting.counts.per_enter()) else {}),
        "generator": plain.get("generator"),
        "kept_rate": plain.get("kept_rate"),  # None in the closed loop: no rate to keep
        # The plain window's throughput and the generator's share of its core: in the closed
        # loop the first is the server's pace, unless the second says the generator set it.
        "requests_per_s": plain.get("requests_per_s"),
        "load_cpu_share": plain.get("load_cpu_share"),
    }


def cpu_only(row: Row, cores, workdir: Path, params: dict) -> float:
    """A further repetition of a row's CPU per request (µs): a fresh server, the warm-up, one
    plain window, nothing counted. The anatomy's CPU column is the median of three (the
    first from measure_row), with their range: one repetition was noise read as a finding."""
    with Serving(row, params, cores, workdir) as server:
        server.load("warm-up", WARMUP_S)
        plain = server.load("plain", PLAIN_S)
    return plain["server_cpu_s"] / plain["requests"] * 1e6


CPU_REPETITIONS = 3  # the CPU column's repetitions per row, interleaved across rows


def anatomy_path(results: Path, closed: bool = False) -> Path:
    """The file of the cost anatomy at echo's fixed offered load, or in the closed loop."""
    return results / FILES[closed]


def save_anatomy(results: Path, data: dict, closed: bool = False) -> None:
    store.save_file(results, FILES[closed], data)


def rows(loop_names: list[str] | None = None) -> list[Row]:

    every = server_rows()
    if loop_names:
        every = [r for r in every if r.variant in loop_names]
    return every


def run(
    loop_names: list[str] | None,
    results: Path,
    prefer: str | None = None,
    closed: bool = False,
) -> int:
    """Measure the anatomy of every (selected) echo row at the fixed offered load, or in the
    closed loop; store it beside the bench's results, each point in its own file."""
    import tempfile

    tool, why = available_counter(prefer)
    stored = load_anatomy(results, closed=closed) or {}
    env = environment.capture()
    machine = json.loads(json.dumps(environment.machine_key(env)))  # as stored: lists
    params = point_params(closed, results)
    point = stored.get("point", {})
    if (
        stored.get("machine") != machine
        or stored.get("counter") != tool
        or any(point.get(name) != value for name, value in params.items())
    ):
        stored = {}  # another machine, counter or point (an offered rate): do not mix
    stored.update(
        machine=machine,
        environment=env,
        counter=tool,
        unavailable=why,
        point={**params, "window_s": PLAIN_S},
    )
    measured = stored.setdefault("rows", {})
    # A row keeps when it was measured: rows this run leaves alone are of an earlier session.
    for entry in measured.values():
        entry.setdefault("date", stored.get("date"))
    if tool is not None:
        cores = Cores.plan()
        selected = rows(loop_names)
        for row in selected:
            with tempfile.TemporaryDirectory(prefix="anatomy-") as tmp:
                try:
                    measured[row.key] = measure_row(row, tool, cores, Path(tmp), params)
                    # The code counted, so the page can mark a row whose code changed since.
                    measured[row.key]["code"] = fingerprint(registry.get("echo"), row)
                except (ChildFailed, RuntimeError, OSError) as error:
                    measured[row.key] = {"label": row.label, "kind": row.kind, "error": str(error)}
            measured[row.key]["date"] = _now()
            print(f"anatomy: {measured[row.key].get('label')}: {_one_line(measured[row.key])}")
        for row in selected:  # the others keep their repetitions
            entry = measured[row.key]
            if "error" not in entry:
                entry["cpu_us_reps"] = [entry["user_us"] + entry["system_us"]]
        for turn in range(1, CPU_REPETITIONS):  # rounds over every row: drift spreads evenly
            for row in rows(loop_names):
                entry = measured.get(row.key, {})
                if "error" in entry:
                    continue
                with tempfile.TemporaryDirectory(prefix="anatomy-") as tmp:
                    try:
                        entry["cpu_us_reps"].append(cpu_only(row, cores, Path(tmp), params))
                    except (ChildFailed, RuntimeError, OSError) as error:
                        entry["cpu_error"] = str(error)
                print(f"anatomy: {entry['label']}: CPU repetition {turn + 1}")
    else:
        print(f"anatomy: no syscall counter: {why}")
    stored["date"] = session_date(stored)
    save_anatomy(results, stored, closed=closed)
    return 0 if tool is not None else 1


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def session_date(stored: dict) -> str:
    """The stored anatomy's date: the one most of its rows were measured on (a run of a few
    rows, ``--loop``, adds rows of a later date and leaves the others' as they were), or now."""
    dates = Counter(e["date"] for e in stored.get("rows", {}).values() if e.get("date"))
    return dates.most_common(1)[0][0] if dates else _now()


def _one_line(entry: dict) -> str:
    if "error" in entry:
        return f"failed: {entry['error']}"
    s = entry["syscalls"]
    pace = f"{rate:,.0f} requests/s, " if (rate := entry.get("requests_per_s")) else ""
    line = (
        f"{pace}{entry['user_us'] + entry['system_us']:.2f} µs/request "
        f"(user {entry['user_us']:.2f}), {s['total']:.2f} syscalls/request "
        f"({s['recv_eagain']:.2f} failed recvs, {s['epoll_ctl']:.2f} epoll_ctl)"
    )
    if uring := entry.get("uring"):
        line += (
            f", {s['io_uring_enter']:.3f} io_uring_enter/request, "
            f"{_figure(uring['submitted_per_enter'])} submitted and "
            f"{_figure(uring['reaped_per_enter'])} reaped per enter"
        )
    return line


def _figure(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}"


def main(args) -> int:
    """``python -m bench run --study anatomy``: the run's --loop, --results, and this study's
    --counter and --closed-loop."""
    return run(args.loop, args.results, args.counter, closed=args.closed_loop)
