"""Fresh processes for every measured run, pinned to their own cores, reaped with their usage.

The process under test (a server, a sleeping loop, a crawler, a micro benchmark) runs on one
core and its peer (load generator, site server) on another, so they do not steal each other's
time slices; where the machine has one core, or no affinity call, nothing is pinned and the
environment record says so. Children are reaped with ``os.wait4``, which hands back exactly that
child's CPU time (its own, plus any children it reaped) without sampling.

Peak memory is not taken from ``wait4``: on Linux a child's ``ru_maxrss`` starts at its
parent's RSS at fork and survives ``exec``, so every child of a bench process that has
imported matplotlib would report at least that much. The kernel's per-address-space high-water
mark (``VmHWM`` in ``/proc/PID/status``) starts afresh at ``exec``; it is read while the child
runs (it only grows, so the last reading before exit is the peak up to then, give or take the
last ``PEAK_SAMPLE`` seconds) and just before a server is asked to stop.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from machine.environment import ROOT, usable_cores
from machine.proc import peak_rss

# How every server of the lab announces it is ready (workloads/echo's convention).
LISTENING = re.compile(r"listening on \S+:(\d+)")
PEAK_SAMPLE = 0.05  # seconds between readings of a running child's high-water mark


@dataclass(frozen=True)
class Cores:
    """Which core the subject and its peer run on (None: not pinned)."""

    subject: int | None
    peer: int | None

    @classmethod
    def plan(cls) -> Cores:
        cores = usable_cores()
        if len(cores) >= 2 and hasattr(os, "sched_setaffinity"):
            return cls(subject=cores[0], peer=cores[1])
        return cls(subject=None, peer=None)

    def describe(self) -> str:
        if self.subject is None:
            return "not pinned (one usable core, or no affinity call on this platform)"
        return f"subject on core {self.subject}, peer on core {self.peer}"


@dataclass(frozen=True)
class Usage:
    """How a reaped child ended and what it used."""

    returncode: int
    cpu_seconds: float
    peak_rss_bytes: int | None  # None where /proc is missing or the child ended too soon
    wall_seconds: float


class Child:
    """A child process started pinned, whose end is reaped with its resource usage."""

    def __init__(
        self,
        argv: list[str],
        core: int | None,
        *,
        stdout=subprocess.DEVNULL,
        stderr_path: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.argv = argv
        self._stderr_file = open(stderr_path, "wb") if stderr_path else None  # noqa: SIM115
        self.stderr_path = stderr_path
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            stdout=stdout,
            stderr=self._stderr_file or subprocess.DEVNULL,
            env={**os.environ, "PYTHONHASHSEED": "0", **(env or {})},
        )
        self.usage: Usage | None = None
        self.peak_rss: int | None = None
        if core is not None:
            # If the child is already gone, its exit status will say why.
            with contextlib.suppress(OSError):
                os.sched_setaffinity(self.proc.pid, {core})

    @property
    def pid(self) -> int:
        return self.proc.pid

    def read_port(self, timeout: float, announcement: re.Pattern | None = None) -> int:
        """The port a server announces on stdout (by default ``listening on HOST:PORT ...``)."""
        announcement = announcement or LISTENING
        deadline = time.monotonic() + timeout
        stream = self.proc.stdout
        assert stream is not None, "start the child with stdout=subprocess.PIPE"
        buffered = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(stream.fileno(), 4096)
            if not chunk:
                break
            buffered += chunk
            match = announcement.search(buffered.decode(errors="replace"))
            if match:
                return int(match.group(1))
        raise ChildFailed(
            f"{self.short()} did not announce its port within {timeout:.0f} s "
            f"(stdout: {buffered[-300:]!r}){self.stderr_tail()}"
        )

    def wait(self, timeout: float) -> Usage:
        """Reap the child (killing it after `timeout` seconds) and return its usage."""
        if self.usage is not None:
            return self.usage
        killed = not self._wait_exit(timeout)
        if killed:
            self.proc.kill()
        _, status, rusage = os.wait4(self.proc.pid, 0)
        wall = time.perf_counter() - self.started
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self._stderr_file is not None:
            self._stderr_file.close()
        self.usage = Usage(
            returncode=self.proc.returncode,
            cpu_seconds=rusage.ru_utime + rusage.ru_stime,
            peak_rss_bytes=self.peak_rss,
            wall_seconds=wall,
        )
        if killed:
            raise DidNotFinish(timeout, f"{self.short()} did not finish within {timeout:g} s")
        return self.usage

    def sample_peak_rss(self) -> None:
        """Read the child's memory high-water mark (a no-op once it is gone)."""
        peak = peak_rss(self.proc.pid)
        if peak is not None:
            self.peak_rss = max(peak, self.peak_rss or 0)

    def _wait_exit(self, timeout: float) -> bool:
        """Block until the child exits (True) or timeout passes (False), sampling its peak."""
        deadline = time.monotonic() + timeout
        pidfd = os.pidfd_open(self.proc.pid) if hasattr(os, "pidfd_open") else None
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if pidfd is not None:
                    if select.select([pidfd], [], [], min(left, PEAK_SAMPLE))[0]:
                        return True
                elif os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                    return True
                else:
                    time.sleep(min(left, PEAK_SAMPLE))
                self.sample_peak_rss()
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def stop(self, timeout: float = 10.0) -> Usage:
        """SIGTERM the child (a server), then reap it."""
        if self.usage is None and self.proc.poll() is None:
            self.sample_peak_rss()
            self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        """Make sure the child is gone and reaped (cleanup after a failure), also one that
        already died on its own.

        A plain ``os.kill``, not ``Popen.kill``: its ``poll()`` would reap a dead child before
        ``wait`` can read its usage (``pidfd_open`` then fails with ProcessLookupError), and a
        server that crashed must still end its repetition with its reason. A dead child not
        yet reaped keeps its pid, so the signal cannot reach another process.
        """
        if self.usage is None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildFailed):
                self.wait(5)

    def short(self) -> str:
        return " ".join(self.argv[1:4]) + (" ..." if len(self.argv) > 4 else "")

    def stderr_tail(self, chars: int = 600) -> str:
        if self.stderr_path is None or not self.stderr_path.exists():
            return ""
        text = self.stderr_path.read_text(errors="replace").strip()
        return f"\n{text[-chars:]}" if text else ""

    def check(self, usage: Usage) -> None:
        """Raise ChildFailed with its stderr if the child exited with an error."""
        if usage.returncode != 0:
            raise ChildFailed(
                f"{self.short()} exited with status {usage.returncode}{self.stderr_tail()}"
            )


class ChildFailed(RuntimeError):
    """A measured process failed: the repetition is recorded as failed, with this message."""


class DidNotFinish(ChildFailed):
    """A measured process overran its time cap and was killed: a result, not a crash."""

    def __init__(self, cap_s: float, message: str) -> None:
        super().__init__(message)
        self.cap_s = cap_s


# The interpreter the process under test runs on: this one, unless the runner measures a row on
# another (``python -m bench run --python 3.13``), for the length of that repetition. Peers (the
# echo load generator's wrapper, the crawler's site server) stay on this interpreter, so one
# interpreter's peers serve every interpreter's rows alike.
_SUBJECT: list[str] = [sys.executable]


@contextlib.contextmanager
def subject_on(executable: str):
    """Within the block, `python()` starts the process under test on `executable`."""
    before = _SUBJECT[0]
    _SUBJECT[0] = executable
    try:
        yield
    finally:
        _SUBJECT[0] = before


def python(*args: str) -> list[str]:
    """argv running the process under test (the loop measured) on a module of the lab."""
    return [_SUBJECT[0], *args]


def peer_python(*args: str) -> list[str]:
    """argv running a peer (load generator, site server) on the interpreter running the bench."""
    return [sys.executable, *args]


def mib(size: int | None) -> float | None:
    """Bytes as MiB (None stays None)."""
    return None if size is None else size / 2**20
