"""Driving the workloads' real processes from a property: servers, clients, measurements.

The fault suite's whole-workload cases run the real echo server, load generator, crawler and
site server as separate processes on loopback, as a user (or the bench) runs them, and judge
them from the outside only: what comes back over the sockets, exit statuses and messages, and
the processes' CPU, memory and sockets as Linux reports them (``/proc``, psutil).

A whole-workload case is a property like any other (:func:`case_prop`): the conftest
parametrizes it over every discovered (variant, style) pair, so it has its row in the matrix,
"not claimed" and known deviations included. It takes the ``case`` fixture rather than ``play``
and starts the processes itself; each helper here is a context manager that kills what it
started, so a failing case leaves nothing running.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from conformance.harness import Case, prop
from loops import STYLES
from machine import proc

ROOT = Path(__file__).resolve().parent.parent

# A guard, never a timing claim: how long to wait for a process to say it is ready, to exit
# after a signal, or for an echo. Generous, because this machine is shared.
PATIENCE = 20.0


def case_prop(needs: str, *, timeout: float) -> Callable[[Callable[..., Any]], Callable]:
    """A property whose test plays the whole workload itself for the case's (variant, style).

    The test takes ``case`` (and any fixture) instead of ``play``: it starts the workload's
    processes, or calls its CLI, with ``--loop``/``--style`` from the case. It is registered for
    every style, so every (variant, style) pair the conftest discovers is a case of it.
    """

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        test = prop(needs, timeout=timeout)(test)
        for style in STYLES:
            test.lab_property.scenarios[style] = _played_by_the_test
        return test

    return decorate


def _played_by_the_test(*args: Any) -> None:
    raise TypeError("a case_prop property plays the workload in its test, which takes `case`")


def needs_also(case: Case, *capabilities: str) -> None:
    """Skip (shown as "not claimed") unless the variant claims these capabilities too."""
    import pytest

    missing = set(capabilities) - case.variant.capabilities
    if missing:
        pytest.skip(f"not claimed: needs {sorted(missing)}")


def module_command(module: str, *args: str) -> list[str]:
    """``python -m module args...`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def loop_args(case: Case) -> list[str]:
    return ["--loop", case.variant.name, "--style", case.style]


PR_SET_PDEATHSIG = 1


def child_setup(max_fds: int | None = None) -> Callable[[], None]:
    """A preexec_fn: the child gets SIGTERM if this test process dies (so a killed test run
    leaves nothing running), and at most max_fds descriptors (at most the hard limit).

    The hard limit is lowered too: servers raise their soft limit as far as the hard one allows
    (so 10 000 connections fit), and a ceiling they could lift would not be a ceiling."""

    def apply() -> None:
        if sys.platform == "linux":
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if max_fds is not None:
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            limit = max_fds if hard == resource.RLIM_INFINITY else min(max_fds, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return apply


def spawn(command: list[str], **options: Any) -> subprocess.Popen:
    """Start command from the repository root, text mode, tied to this process's life."""
    return subprocess.Popen(command, cwd=ROOT, text=True, preexec_fn=child_setup(), **options)


@dataclass
class Stopped:
    """How a process ended: its exit status and what it wrote."""

    returncode: int
    out: str
    err: str


class Server:
    """A server process that printed a ready line with its port; stderr goes to a file.

    (A pipe nobody reads would fill with log lines and block the server, and a server that
    spins logging must be seen spinning, not blocked on a full pipe.)
    """

    def __init__(self, command: list[str], ready: str, workdir: Path, max_fds: int | None = None):
        self.stderr_path = workdir / f"server-{len(list(workdir.glob('server-*')))}.err"
        self._stderr = self.stderr_path.open("w")
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            preexec_fn=child_setup(max_fds),
        )
        self.pid = self.process.pid
        line = self._read_line()
        match = re.search(ready, line)
        if not match:
            self.kill()
            raise AssertionError(f"{command} did not start: {line!r}\n{self.errors()}")
        self.port = int(match.group(1))
        self.ready_line = line

    def _read_line(self) -> str:
        ready, _, _ = select.select([self.process.stdout], [], [], PATIENCE)
        return self.process.stdout.readline() if ready else ""

    def errors(self) -> str:
        """What the server wrote to stderr so far."""
        return self.stderr_path.read_text(errors="replace")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, signum: int = signal.SIGTERM) -> Stopped:
        """Send signum and wait for the exit (killed after PATIENCE seconds)."""
        if self.alive:
            self.process.send_signal(signum)
        try:
            out, _ = self.process.communicate(timeout=PATIENCE)
        except subprocess.TimeoutExpired:
            self.kill()
            out = "(did not exit within the patience: killed)"
        return Stopped(self.process.returncode, out, self.errors())

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait(timeout=PATIENCE)
        self.process.stdout.close()
        self._stderr.close()

    def connections(self) -> int:
        """TCP connections the server still holds a descriptor for (listeners aside)."""
        try:
            held = psutil.Process(self.pid).net_connections("tcp")
        except psutil.NoSuchProcess:
            return 0
        return sum(1 for c in held if c.status != psutil.CONN_LISTEN)

    def fds(self) -> int:
        return psutil.Process(self.pid).num_fds()

    def rss(self) -> int:
        """Resident memory, bytes (0 once it is gone)."""
        return proc.resident(self.pid) or 0


@contextlib.contextmanager
def running(command: list[str], ready: str, workdir: Path, **options: Any) -> Iterator[Server]:
    """A Server for the block; killed at the end if the block did not stop it."""
    server = Server(command, ready, workdir, **options)
    try:
        yield server
    finally:
        server.kill()


ECHO_READY = r"^listening on \S+:(\d+) "


def echo_command(case: Case) -> list[str]:
    """The lab's echo server on the case's loop and style, on a free port."""
    return module_command("workloads.echo", *loop_args(case), "--port", "0")


def stopped_cleanly(server: Server, signum: int = signal.SIGTERM) -> bool:
    """Stop the echo server: True if it exits 0 saying every socket is closed."""
    stopped = server.stop(signum)
    return stopped.returncode == 0 and "every socket closed" in stopped.out


def until(condition: Callable[[], bool], patience: float = PATIENCE, step: float = 0.05) -> bool:
    """Poll condition until it holds (True) or the patience runs out (False): a guard for
    something that happens in another process, where no event can be awaited."""
    deadline = time.monotonic() + patience
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


# --- clients ------------------------------------------------------------------------------


def connect(port: int, timeout: float = PATIENCE) -> socket.socket:
    """A blocking client socket to the server on loopback."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def reset(sock: socket.socket) -> None:
    """Close with SO_LINGER 0: the peer gets a RST instead of a FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """n bytes from sock; fewer if the peer closed first or the socket's timeout ran out."""
    data = bytearray()
    with contextlib.suppress(TimeoutError):
        while len(data) < n:
            chunk = sock.recv(min(n - len(data), 1 << 20))
            if not chunk:
                break
            data += chunk
    return bytes(data)


def pattern(size: int, seed: int = 5) -> bytes:
    """size seeded random bytes, cheaply: a random block of a prime length, repeated (a lost,
    repeated or reordered chunk of any power-of-two size shows)."""
    block = random.Random(seed).randbytes(1_048_573)
    return (block * (size // len(block) + 1))[:size]


def load(port: int, workdir: Path, *args: str, server_pid: int | None = None) -> dict:
    """Run the lab's load generator against port; its JSON record, plus its exit status."""
    import json

    report = workdir / f"load-{len(list(workdir.glob('load-*.json')))}.json"
    command = module_command("workloads.echo.load", "--port", str(port), "--json", str(report))
    command += [*args, *(["--server-pid", str(server_pid)] if server_pid else [])]
    done = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=child_setup(8192),
    )
    record = json.loads(report.read_text()) if report.exists() else {"ok": False}
    record["returncode"] = done.returncode
    record["output"] = done.stdout + done.stderr
    return record


# --- measurements -------------------------------------------------------------------------


def cpu_demand(pid: int, seconds: float) -> dict[str, float]:
    """How much CPU process pid used and wanted over `seconds` of wall time, as shares of it.

    ``cpu``: CPU seconds (psutil) per wall second. ``demand``: (time on a CPU + time runnable
    but waiting for one) per wall second, from /proc/PID/task/*/schedstat. A spinning process
    is always running or runnable, so its demand is near 1 however busy the machine is, where
    its CPU share can sink to its fair share of a crowded core; a process asleep in epoll_wait
    has both near 0.
    """
    process = psutil.Process(pid)
    times = process.cpu_times()
    cpu0, sched0, wall0 = times.user + times.system, proc.schedstat(pid), time.monotonic()
    time.sleep(seconds)  # the measuring interval itself, not a wait for anything
    times = process.cpu_times()
    cpu1, sched1, wall1 = times.user + times.system, proc.schedstat(pid), time.monotonic()
    wall = wall1 - wall0
    demand = (sched1[0] - sched0[0]) + (sched1[1] - sched0[1])
    return {"cpu": (cpu1 - cpu0) / wall, "demand": demand / wall}


def waiting_in_selector(pid: int, fds: int = 0) -> bool:
    """True if process pid holds at least `fds` descriptors and is asleep in epoll_wait, poll
    or select (/proc/PID/wchan): a loop that has set up and now waits for something to do."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            wchan = f.read()
        held = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False
    return held >= fds and ("poll" in wchan or "select" in wchan)


def settled_in_selector(pid: int, fds: int, quiet: float) -> Callable[[], bool]:
    """A condition: process pid waits in its selector holding `fds` descriptors, and has not
    woken once (/proc/PID/status voluntary switches) over the last `quiet` seconds or more.

    A wait longer than any of the program's short waits (a settling sleep, a sleep(0)) is its
    long one, so a signal sent then lands in that wait, not in the bookkeeping around it.
    """
    wakeups, since = None, 0.0  # the wake-up count last seen, and when it was first seen

    def settled() -> bool:
        nonlocal wakeups, since
        # None: not in its selector, or gone (then it never settles)
        now_wakeups = proc.voluntary_switches(pid) if waiting_in_selector(pid, fds) else None
        if now_wakeups is None or now_wakeups != wakeups:
            wakeups, since = now_wakeups, time.monotonic()
            return False
        return time.monotonic() - since >= quiet

    return settled


def wait_watching_memory(process: subprocess.Popen, timeout: float) -> tuple[int, int]:
    """Wait for a child, killing it after timeout: (exit status, peak RSS seen, bytes).

    The peak is sampled while it runs (it only grows, so the last sample before the exit
    holds all but the last few milliseconds); a child that reports its own peak at exit
    (the workloads' ``peak_rss_mib``) closes that gap.
    """
    deadline, peak = time.monotonic() + timeout, 0
    while process.poll() is None:
        peak = max(peak, proc.peak_rss(process.pid) or 0)
        if time.monotonic() > deadline:
            process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.05)
    return process.returncode, peak
