"""Subprocesses: asyncio's SubprocessTransport, a child watched through its pidfd.

``subprocess_exec`` starts the child with ``subprocess.Popen`` and connects its stdin, stdout
and stderr with the loop's pipe transports (``transports.py``). Learning that the child has
exited is where asyncio needs "child watchers" (a SIGCHLD handler, or a thread per child
blocked in ``waitpid``). Linux has a better answer since 5.3: ``os.pidfd_open`` gives an fd that
becomes *readable* when the child exits, so the exit is one more readiness callback
(``_child_exited``), like a socket's, and signals go through ``signal.pidfd_send_signal`` to that
very process even if its pid has been reused. Without pidfd (other systems, old kernels),
subprocesses are not provided.

The order the protocol sees is asyncio's: ``connection_made`` first (pipe data and an early
exit that come before it are held back, then delivered in order), ``pipe_data_received`` and
``pipe_connection_lost`` per fd, ``process_exited``, and ``connection_lost`` only once the
child has exited and every pipe has closed. ``asyncio.subprocess.Process.wait()`` awaits the
transport's ``_wait()``: the name asyncio's streams layer calls, so it is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from typing import Any

PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


class _PipeProtocol(asyncio.Protocol):
    """One of the child's pipes: tells the subprocess transport what happens on fd."""

    def __init__(self, owner: SubprocessTransport, fd: int) -> None:
        self.owner, self.fd = owner, fd

    def data_received(self, data: bytes) -> None:
        self.owner._deliver(self.owner._protocol.pipe_data_received, self.fd, data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.owner._pipe_lost(self.fd, exc)

    def pause_writing(self) -> None:
        self.owner._deliver(self.owner._protocol.pause_writing)

    def resume_writing(self) -> None:
        self.owner._deliver(self.owner._protocol.resume_writing)


class SubprocessTransport(asyncio.SubprocessTransport):
    """A child process and its three pipes, for a SubprocessProtocol."""

    def __init__(self, loop: Any, protocol: Any, args: Any, shell: bool, **popen: Any) -> None:
        super().__init__({})
        self._loop = loop
        self._protocol = protocol
        self._proc = subprocess.Popen(args, shell=shell, bufsize=0, **popen)
        self._extra["subprocess"] = self._proc
        self._pid = self._proc.pid
        self._pidfd = os.pidfd_open(self._pid)
        self._returncode: int | None = None
        self._pipes: dict[int, Any] = {}  # fd -> its pipe transport, once connected
        self._open_fds = {fd for fd, pipe in self._pipe_files() if pipe is not None}
        self._held: list[tuple] | None = []  # protocol calls made before connection_made
        self._exit_waiters: list[asyncio.Future] = []
        self._closed = False
        loop.add_reader(self._pidfd, self._child_exited)

    def _pipe_files(self) -> list[tuple[int, Any]]:
        return [(0, self._proc.stdin), (1, self._proc.stdout), (2, self._proc.stderr)]

    async def _start(self) -> None:
        """Connect the pipes, then tell the protocol, then deliver what was held back."""
        for fd, pipe in self._pipe_files():
            if pipe is None:
                continue
            connect = self._loop.connect_write_pipe if fd == 0 else self._loop.connect_read_pipe
            self._pipes[fd], _ = await connect(lambda fd=fd: _PipeProtocol(self, fd), pipe)
        self._loop.call_soon(self._protocol.connection_made, self)
        held, self._held = self._held, None
        for call in held:
            self._loop.call_soon(*call)
        # Return only after connection_made has run: asyncio.subprocess reads the protocol's
        # stdin/stdout streams, which connection_made creates, as soon as this returns.
        made = self._loop.create_future()
        self._loop.call_soon(made.set_result, None)
        await made

    def _deliver(self, callback: Any, *args: Any) -> None:
        if self._held is not None:
            self._held.append((callback, *args))
        else:
            self._loop.call_soon(callback, *args)

    # -- the child's end --------------------------------------------------------------------

    def _child_exited(self) -> None:
        """The pidfd is readable: the child has exited; reap it."""
        try:
            pid, status = os.waitpid(self._pid, os.WNOHANG)
        except ChildProcessError:  # reaped by someone else (Popen.poll, a SIGCHLD handler)
            pid, status = self._pid, None
        if pid == 0:
            return
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._pidfd = -1
        if status is not None:
            self._proc.returncode = os.waitstatus_to_exitcode(status)
        self._returncode = self._proc.returncode if self._proc.returncode is not None else 255
        self._deliver(self._protocol.process_exited)
        for waiter in self._exit_waiters:
            if not waiter.done():
                waiter.set_result(self._returncode)
        self._exit_waiters = []
        self._try_finish()

    def _pipe_lost(self, fd: int, exc: BaseException | None) -> None:
        self._open_fds.discard(fd)
        self._deliver(self._protocol.pipe_connection_lost, fd, exc)
        self._try_finish()

    def _try_finish(self) -> None:
        if self._returncode is not None and not self._open_fds and self._protocol is not None:
            protocol, self._protocol = self._protocol, None
            self._deliver(protocol.connection_lost, None)

    async def _wait(self) -> int:
        """Wait for the child's exit; its return code (what Process.wait() awaits)."""
        if self._returncode is not None:
            return self._returncode
        waiter = self._loop.create_future()
        self._exit_waiters.append(waiter)
        return await waiter

    # -- what the protocol may ask ----------------------------------------------------------

    def get_pid(self) -> int:
        return self._pid

    def get_returncode(self) -> int | None:
        return self._returncode

    def get_pipe_transport(self, fd: int) -> Any:
        return self._pipes.get(fd)

    def send_signal(self, signum: int) -> None:
        if self._pidfd < 0:
            raise ProcessLookupError  # exited and reaped: the pid may be someone else's now
        signal.pidfd_send_signal(self._pidfd, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def is_closing(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the pipes; a child still running is killed (asyncio's rule)."""
        if self._closed:
            return
        self._closed = True
        for transport in self._pipes.values():
            transport.close()
        if self._returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.kill()

    def __repr__(self) -> str:
        state = "running" if self._returncode is None else f"returncode={self._returncode}"
        return f"<{type(self).__name__} pid={self._pid} {state}>"
