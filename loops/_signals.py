"""A signal's handler on time: the loop's wake-up socket made CPython's signal wake-up fd.

CPython runs a signal's Python handler (KeyboardInterrupt, a workload's stop) only when the
main thread next runs bytecode (the ``signal`` module's documentation, "Execution of Python
signal handlers"). A loop asleep in the kernel, waiting for I/O, learns of the signal only if
it interrupts that wait; one that lands just before the wait begins, or that the kernel hands
to another thread, leaves the loop asleep until something else happens, for good on an idle
server. The C-level handler writes a byte to the fd ``signal.set_wakeup_fd`` names ("A
library can use this to wakeup select or poll", its docstring says; trio does, in
trio/_core/_wakeup_socketpair.py): made the loop's own wake-up socket, that byte ends the
wait, and the handler runs. The property: conformance/test_faults_loop.py, "a signal that
wakes no one"."""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def signals_wake(fd: int) -> Iterator[None]:
    """While the block runs, a signal writes a byte to fd (a non-blocking socket's or pipe's
    write end whose read end the loop watches); then the previous wake-up fd comes back, unless
    the block set another (that one is kept). Only
    the main thread may set it: a loop run in another thread leaves it alone, and there the
    signal's handler is the main thread's business."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.set_wakeup_fd(fd, warn_on_full_buffer=False)
    try:
        yield
    finally:
        current = signal.set_wakeup_fd(previous)
        if current != fd:  # set again meanwhile (an add_signal_handler): that one stays
            signal.set_wakeup_fd(current, warn_on_full_buffer=False)


def wake_pair() -> tuple[socket.socket, socket.socket]:
    """A loop's wake-up: (reader, writer), both non-blocking. A worker thread, or a signal
    once ``signals_wake(writer.fileno())`` holds, writes a byte to the writer; the loop
    watches the reader (a readiness loop in its poll, the completions loop with a RECV)."""
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    return reader, writer
