"""The loop contract: the Variant record and the four style APIs, in one file.

Every variant folder under ``loops/`` defines ``VARIANT = Variant(...)``. The conformance
suite, the workloads and the bench call only the names written here (they are asyncio's on
purpose), so a reader who knows this file knows everything a loop must offer.

Styles:
- ``callbacks``: a zero-argument factory returning a new :class:`CallbacksLoop`.
- ``coroutines``: a namespace (ideally a module) satisfying :class:`CoroutinesAPI`, used with
  ``await``.
- ``generators``: the same names as ``coroutines``, used with ``yield from``.
- ``blocking``: the same names as plain calls that block the calling task (:class:`BlockingAPI`).

A variant that can also serve as asyncio's event loop says so with ``asyncio_loop``, a
zero-argument factory of ``asyncio.AbstractEventLoop`` objects (what ``asyncio.run(...,
loop_factory=...)`` and ``uvicorn --loop module:factory`` take); workloads that run real
asyncio programs (``workloads/http``) find such variants by discovery through it.

Capabilities are the names in :data:`CAPABILITIES`; a variant claims the ones it passes, and a
conformance property outside its claims shows as "not claimed" rather than failing.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import math
import numbers
import platform
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

STYLES = ("callbacks", "generators", "coroutines", "blocking")

# What a variant may claim. A conformance property names the one capability it needs.
CAPABILITIES: dict[str, str] = {
    "core": "the style's basic API: scheduling order, timers, sleep, spawn/join/cancel, run",
    "timer-fifo": "timers with equal deadlines fire in the order they were scheduled",
    "timer-compaction": "cancelled timers are dropped so a cancel-heavy program stays bounded",
    "fairness": "a task or callback that yields in a tight loop cannot starve others or I/O",
    "exceptions": "errors reach the exception handler or the joiner; the loop goes on",
    "interrupts": "KeyboardInterrupt and SystemExit escape run() and leave the loop usable",
    "tasks-scale": "10 000 concurrent tasks, 1 000-level await/yield-from chains",
    "timeouts": "timeout_after raises the builtin TimeoutError and cancels the inner work",
    "queue": "Queue with put/get/task_done/join",
    "io": "TCP: readiness callbacks, or socket calls that wait until the socket can be used "
    "(the designs table says how each loop waits; the blocking style takes sockets in either "
    "mode, see BlockingAPI)",
    "udp": "recvfrom/sendto on datagram sockets",
    "threads": "run_in_thread runs a blocking call on a worker thread without blocking the other "
    "tasks; call_soon_threadsafe, where offered, wakes a blocked loop",
    "hygiene": "no fd, handle or task leaks; close() is idempotent; calls after close fail",
}
EVERY_CAPABILITY = frozenset(CAPABILITIES)  # a variant claims this minus what it cannot pass
TASK_CAPABILITIES = frozenset({"tasks-scale", "timeouts", "queue"})  # need tasks: not callbacks


# What a variant may declare about its design, outside the styles (all optional). The table of
# designs in loops/README.md is rendered from these declarations by ``python -m bench report``,
# and tests/test_designs.py checks a home-made loop's declarations against its own code, so the
# prose about "the loops" comes from the loops themselves and a new variant cannot make it false.
IO_MODELS: dict[str, str] = {
    "readiness": "the kernel says a socket is ready (a call would not block); the loop then calls",
    "completion": "the loop hands the kernel the call itself; the kernel says when it is done",
    "blocking": "each task's thread makes the call and the kernel holds it there until done",
}
THREAD_ENTRIES = ("call_soon_threadsafe", "run_in_thread")  # what another thread may call

# Three more, each a key of its table, optionally followed by " (where, naming the code or the
# files)": how the wait reports I/O, what the loop does with a closed fd that the wait still
# reports (a *ghost*: the number is closed, the file lives on in a dup, so epoll keeps reporting
# it and nothing can unregister it by the dead number), and what `recv` does before it waits.
REPORTING: dict[str, str] = {
    "select": "`select()`: the wanted fds handed in at every wait; numbers below 1024 only",
    "poll": "`poll()`: the wanted fds handed in at every wait",
    "epoll-level": "epoll, level-triggered: an fd ready at a wait is reported at that wait",
    "epoll-edge": "epoll with `EPOLLET`: an fd is reported when it changes; read to exhaustion",
    "epoll-oneshot": "epoll with `EPOLLONESHOT`: an fd is reported once, then not until re-armed",
    "io_uring": "no readiness: the kernel reports finished operations, one CQE each",
    "blocking": "no readiness: each task's thread sleeps in its own socket call",
}
GHOST_FDS: dict[str, str] = {
    "rebuilds": "moves its live registrations to a fresh epoll when readiness names no watcher",
    "drops": "the wait fails with EBADF on the closed number; the loop drops that fd",
    "silenced": "reported once; one-shot then keeps it quiet",
    "spins": "reported at every wait, never unregistered: the loop spins (a known deviation)",
    "none": "nothing is registered by number (an operation or a thread holds its file)",
}
SOCKET_CALLS: dict[str, str] = {
    "tries": "calls the socket at once; waits for readiness only on `BlockingIOError`",
    "checkpoint": "lets the other ready work run first (a checkpoint), then calls",
    "registers": "registers for readiness first and calls once the socket is reported",
    "none": "no socket calls: a readiness callback calls the socket itself",
    "blocks": "calls the blocking socket; the calling thread sleeps in the kernel",
}

DECLARED_KEYS = {"reporting": REPORTING, "ghost_fds": GHOST_FDS, "socket_call_first": SOCKET_CALLS}


def declared_key(value: str) -> str:
    """The table key a declaration starts with: "tries (`_drained`)" -> "tries"."""
    return value.split(" (", 1)[0]


PYTHON = ".".join(platform.python_version_tuple()[:2])  # "3.13": how reports name it

# The two kinds of variant. A home-made loop is built here on one idea; a reference adapter only
# maps a production loop (asyncio, uvloop, trio, curio) onto the contract. A reference adapter
# says so twice in its folder, in `Variant(reference=True)` and in the first word of its
# `__init__.py`'s docstring, "Reference:", which discovery reads without running the folder, so
# that a variant unavailable here keeps its kind (tests/test_availability.py holds the two
# together for every variant).
HOME_MADE, REFERENCE = "home-made", "reference"
REFERENCE_DOCSTRING = "Reference:"


class Unavailable(ImportError):
    """Raised by a variant folder's ``__init__`` that cannot run here; ``str()`` is the reason.

    An ImportError because the folder does not import here: code that walks packages and
    skips what does not import (``pkgutil.walk_packages``) skips it too.

    Discovery lists such a variant as unavailable, with the reason in one line, instead of
    crashing: a dependency that does not import on this interpreter, a kernel feature the
    machine lacks. The folder alone says what it needs (see :func:`requires`).
    """


@contextmanager
def requires(what: str) -> Iterator[None]:
    """Fence the imports (or set-up) a variant needs: any failure inside is :class:`Unavailable`.

    ``with requires("curio 1.6"): import curio`` turns curio's ``AttributeError`` at import on
    Python 3.12+ into the reason "curio 1.6 does not load: AttributeError: ...".
    """
    try:
        yield
    except Exception as error:  # whatever the dependency raises is its reason, not the lab's
        raise Unavailable(f"{what} does not load: {type(error).__name__}: {error}") from error


@dataclass(frozen=True)
class Deviation:
    """A known, explained difference from a property: becomes a strict xfail."""

    property: str
    reason: str
    styles: tuple[str, ...] = STYLES
    strict: bool = True  # False only where the variant randomizes on purpose (it may pass)


@dataclass(frozen=True)
class Variant:
    """One loop variant: what it is, what it claims, and its entry point per style."""

    name: str
    summary: str  # one line, shown in the README table and reports
    lineage: str  # the idea and where it comes from
    capabilities: frozenset[str]
    callbacks: Callable[[], CallbacksLoop] | None = None
    generators: Any | None = None  # a namespace satisfying CoroutinesAPI, driven by yield from
    coroutines: Any | None = None  # a namespace satisfying CoroutinesAPI, driven by await
    blocking: Any | None = None  # a namespace satisfying BlockingAPI, called as plain functions
    # Optional, outside the styles: a zero-argument factory of asyncio event loops
    # (asyncio.AbstractEventLoop, with asyncio's own Future and Task), for workloads that run
    # unmodified asyncio programs (the http workload: uvicorn). None: the variant has none.
    asyncio_loop: Callable[[], Any] | None = None
    reference: bool = False  # True for adapters of production loops (asyncio, uvloop, ...)
    deviations: tuple[Deviation, ...] = field(default=())  # filled from deviations.toml
    unavailable: str | None = None  # why it cannot run here (set by discovery), else None
    # Its design, declared (optional; None or () where not declared; see IO_MODELS above):
    io_model: str | None = None  # a key of IO_MODELS
    waits_in: str | None = None  # the call the loop sleeps in with nothing to run
    wake_up: str | None = None  # what a thread writes to end that sleep ("socketpair", ...)
    thread_entries: tuple[str, ...] = ()  # which of THREAD_ENTRIES another thread may call
    cancellation: str | None = None  # how a cancel reaches work that waits, naming the code
    reporting: str | None = None  # a key of REPORTING, then where, in parentheses
    ghost_fds: str | None = None  # a key of GHOST_FDS, likewise
    socket_call_first: str | None = None  # a key of SOCKET_CALLS, likewise (what recv does)

    def __post_init__(self) -> None:
        unknown = set(self.capabilities) - CAPABILITIES.keys()
        if unknown:
            raise ValueError(
                f"variant {self.name!r} claims unknown capabilities {sorted(unknown)}; "
                f"known: {sorted(CAPABILITIES)}"
            )
        if self.io_model is not None and self.io_model not in IO_MODELS:
            raise ValueError(f"variant {self.name!r}: io_model must be one of {list(IO_MODELS)}")
        if set(self.thread_entries) - set(THREAD_ENTRIES):
            raise ValueError(f"variant {self.name!r}: thread_entries are among {THREAD_ENTRIES}")
        for field_name, table in DECLARED_KEYS.items():
            value = getattr(self, field_name)
            if value is not None and declared_key(value) not in table:
                raise ValueError(
                    f"variant {self.name!r}: {field_name} starts with one of {list(table)}"
                )

    @classmethod
    def unavailable_here(cls, name: str, reason: str, *, reference: bool = False) -> Variant:
        """The record discovery keeps for a folder that raised :class:`Unavailable`; its kind
        (``reference``) is the folder's, read from its docstring."""
        return cls(
            name=name,
            summary=f"unavailable on Python {PYTHON}: {reason}",
            lineage="",
            capabilities=frozenset(),
            reference=reference,
            unavailable=reason,
        )

    @property
    def kind(self) -> str:
        """:data:`REFERENCE` for an adapter of a production loop, else :data:`HOME_MADE`."""
        return REFERENCE if self.reference else HOME_MADE

    @property
    def available(self) -> bool:
        return self.unavailable is None

    @property
    def styles(self) -> tuple[str, ...]:
        """The styles this variant speaks, in the canonical order."""
        return tuple(s for s in STYLES if getattr(self, s) is not None)

    def api(self, style: str) -> Any:
        """The entry point for one style, or a clear error if the variant does not speak it."""
        if style not in STYLES:
            raise ValueError(f"unknown style {style!r}; styles are {', '.join(STYLES)}")
        entry = getattr(self, style)
        if entry is None:
            raise ValueError(
                f"variant {self.name!r} does not speak {style}; it speaks {', '.join(self.styles)}"
            )
        return entry


class Handle(Protocol):
    """A scheduled callback."""

    def cancel(self) -> None:
        """Stop the callback from running; harmless if it already ran."""


class TimerHandle(Handle, Protocol):
    """A callback scheduled for a point in time."""

    def when(self) -> float:
        """The loop time at which the callback is due."""


@runtime_checkable
class CallbacksLoop(Protocol):
    """The callbacks style: asyncio's loop API without futures or tasks."""

    def time(self) -> float:
        """The loop's monotonic clock, in seconds."""

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> Handle:
        """Run callback(*args) in a later iteration, FIFO with other call_soon calls."""

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        """Run callback(*args) no earlier than delay seconds from now."""

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        """Run callback(*args) no earlier than loop time `when`."""

    def add_reader(self, fd: int | socket.socket, callback: Callable[..., Any], *args: Any) -> None:
        """Call callback(*args) whenever fd is readable, until remove_reader."""

    def remove_reader(self, fd: int | socket.socket) -> bool:
        """Stop watching fd for reading; True if it was watched."""

    def add_writer(self, fd: int | socket.socket, callback: Callable[..., Any], *args: Any) -> None:
        """Call callback(*args) whenever fd is writable, until remove_writer."""

    def remove_writer(self, fd: int | socket.socket) -> bool:
        """Stop watching fd for writing; True if it was watched."""

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any) -> Handle:
        """call_soon from any thread, waking the loop if it is blocked."""

    def run_in_thread(
        self,
        fn: Callable[..., Any],
        *args: Any,
        callback: Callable[[concurrent.futures.Future], Any],
    ) -> None:
        """Run fn(*args) in a worker thread, then callback(future) on the loop."""

    def set_exception_handler(self, handler: Callable[[Any, dict], Any] | None) -> None:
        """Route errors from callbacks to handler(loop, context); None restores the default."""

    def call_exception_handler(self, context: dict) -> None:
        """Report an error: context has 'message', and maybe 'exception' and 'handle'."""

    def run_forever(self) -> None:
        """Run until stop() is called."""

    def stop(self) -> None:
        """Stop run_forever after the callbacks of the current iteration."""

    def close(self) -> None:
        """Release the selector and wake-up sockets; idempotent."""


class Task(Protocol):
    """A handle on spawned work; only the style functions below operate on it."""


class Queue(Protocol):
    """A FIFO queue for tasks, with unfinished-work accounting (asyncio.Queue's semantics)."""

    def put(self, item: Any) -> Any:
        """(awaitable) Add an item."""

    def get(self) -> Any:
        """(awaitable) Remove and return the oldest item, waiting if there is none."""

    def task_done(self) -> None:
        """Mark one got item as processed."""

    def join(self) -> Any:
        """(awaitable) Wait until every put item has been marked done."""


class CoroutinesAPI(Protocol):
    """The coroutines style (and, with yield from instead of await, the generators style).

    Every method but run, now and task_done returns an awaitable (a coroutine or generator).
    """

    CancelledError: type[BaseException]  # the type this loop raises into cancelled tasks
    Queue: Callable[[], Queue]

    def run(self, coro: Any) -> Any:
        """Run coro on a new loop until it finishes; return its result or raise its error."""

    def now(self) -> float:
        """The running loop's clock, in seconds."""

    def sleep(self, seconds: float) -> Any:
        """Suspend the calling task for at least `seconds`."""

    def spawn(self, coro: Any) -> Any:
        """Start coro as a concurrent task; returns the task."""

    def join(self, task: Task) -> Any:
        """Wait for task; return its result or re-raise its exception."""

    def cancel(self, task: Task) -> Any:
        """Cancel task (CancelledError at its suspension point) and wait for it to end."""

    def timeout_after(self, seconds: float, coro: Any) -> Any:
        """Run coro; if it takes longer than seconds, cancel it and raise TimeoutError."""

    def recv(self, sock: socket.socket, n: int) -> Any:
        """Receive up to n bytes; b'' at EOF."""

    def sendall(self, sock: socket.socket, data: bytes) -> Any:
        """Send all of data, waiting for the socket to drain as needed."""

    def accept(self, sock: socket.socket) -> Any:
        """Accept a connection: (non-blocking socket, address)."""

    def connect(self, sock: socket.socket, address: Any) -> Any:
        """Connect sock to address."""

    def recvfrom(self, sock: socket.socket, n: int) -> Any:
        """Receive a datagram: (data, address)."""

    def sendto(self, sock: socket.socket, data: bytes, address: Any) -> Any:
        """Send a datagram to address."""

    def run_in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run fn(*args) in a worker thread; the result, or its exception re-raised."""


class BlockingAPI(Protocol):
    """The blocking style: the coroutines style's names as plain calls that block the task.

    A task is a function with its arguments (``spawn(fn, *args)``), not a coroutine object, and
    every call returns its result directly. Sockets may come in either mode: the contract asks
    that each variant put a socket in the mode its design needs before its first call on it (a
    home-made variant's README says which, a reference adapter's module docstring says what its
    library does), so a program written for one blocking variant runs on another unchanged.
    """

    CancelledError: type[BaseException]  # raised in a cancelled task where it waits
    Queue: Callable[[], Queue]  # put/get/join block the task; task_done does not

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run fn(*args) as the first task until it returns; its result, or its error raised."""

    def now(self) -> float:
        """The running tasks' clock, in seconds."""

    def sleep(self, seconds: float) -> None:
        """Block the calling task for at least `seconds`."""

    def spawn(self, fn: Callable[..., Any], *args: Any) -> Task:
        """Start fn(*args) as a concurrent task; returns the task."""

    def join(self, task: Task) -> Any:
        """Block until task ends; its result, or its exception re-raised."""

    def cancel(self, task: Task) -> None:
        """Cancel task (CancelledError where it waits) and block until it ends."""

    def timeout_after(self, seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
        """Call fn(*args); if it takes longer than seconds, cancel it and raise TimeoutError."""

    def recv(self, sock: socket.socket, n: int) -> bytes:
        """Receive up to n bytes; b'' at EOF."""

    def sendall(self, sock: socket.socket, data: bytes) -> None:
        """Send all of data."""

    def accept(self, sock: socket.socket) -> tuple[socket.socket, Any]:
        """Accept a connection: (socket, address), in the mode the variant uses."""

    def connect(self, sock: socket.socket, address: Any) -> None:
        """Connect sock to address."""

    def recvfrom(self, sock: socket.socket, n: int) -> tuple[bytes, Any]:
        """Receive a datagram: (data, address)."""

    def sendto(self, sock: socket.socket, data: bytes, address: Any) -> int:
        """Send a datagram to address."""

    def run_in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run fn(*args) in a worker thread; the result, or its exception re-raised."""


def check_nonblocking(sock: socket.socket) -> None:
    """Reject a blocking socket: a loop would freeze on it, so say so instead."""
    if sock.gettimeout() != 0:
        raise ValueError(
            f"the socket must be non-blocking (call sock.setblocking(False)): {sock!r}"
        )


# What a blocking-style call is handed, checked as every blocking variant checks it: a plain
# function (a coroutine function would never run: nothing awaits it) and a number of seconds.
def check_function(fn: Any, caller: str) -> None:
    if not callable(fn) or inspect.iscoroutinefunction(fn):
        raise TypeError(f"{caller}() takes a plain function and its arguments, not {fn!r}")


def check_seconds(seconds: Any) -> float:
    if not isinstance(seconds, numbers.Real):
        raise TypeError(f"seconds must be a number, not {seconds!r}")
    if math.isnan(seconds):
        raise ValueError("seconds must not be NaN")
    return seconds
