"""What every workload CLI shares: loop/style resolution, stop signals, JSON results.

The same ``--loop NAME [--style S]`` options and usage errors, a stop on SIGINT or SIGTERM
that every style can wait for, one flat JSON record, argparse types that say their range, and
the process's own measures (open sockets, peak memory). Nothing here imports a loop: loops come
from discovery. ``workloads/README.md`` says what the CLIs offer.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import signal
import socket
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import loops
from machine.proc import peak_rss

Scalar = str | int | float | bool | None


def add_loop_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--loop NAME`` (required) and ``--style S`` to a workload's parser."""
    parser.add_argument(
        "--loop",
        required=True,
        metavar="NAME",
        help="the variant to run on (`python -m loops` lists them)",
    )
    parser.add_argument(
        "--style",
        metavar="S",
        help=f"one of {', '.join(loops.STYLES)}; default: the variant's first style",
    )


def resolve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[loops.Variant, str]:
    """The variant and style named by ``--loop``/``--style``, or a usage error listing options."""
    try:
        variant = loops.get(args.loop)
    except loops.VariantLookupError as error:  # unknown, or unavailable on this interpreter
        parser.error(str(error))
    style = args.style or variant.styles[0]
    try:
        variant.api(style)
    except ValueError as error:
        parser.error(str(error))
    return variant, style


def run_until_stopped(loop: Any, start: Callable[..., Any], *args: Any) -> None:
    """Callbacks style: call start(*args) on loop and run it until something calls stop().

    An error that reaches the loop's exception handler stops the loop and is raised here, as
    an uncaught error in the main coroutine ends a coroutines-style ``run``: a workload with a
    bug fails loudly instead of waiting forever for a callback that will never come.
    """
    errors: list[dict] = []

    def on_error(loop: Any, context: dict) -> None:
        errors.append(context)
        loop.stop()

    loop.set_exception_handler(on_error)
    loop.call_soon(start, *args)
    loop.run_forever()
    if errors:
        raise RuntimeError(errors[0]["message"]) from errors[0].get("exception")


def style_module(package: str, style: str) -> ModuleType:
    """The workload's implementation for one style, e.g. ``workloads.echo.coroutines``."""
    return importlib.import_module(f"{package}.{style}")


class StopSignals:
    """SIGINT and SIGTERM made into a socket that becomes readable when one arrives.

    Use as a context manager around the loop's run; watch :attr:`reader` for reading. On exit
    the previous handlers come back and both sockets are closed. Every style can wait on a
    socket (``add_reader``, ``await recv``, ``yield from recv``), so a server stops the same way
    on every loop without the contract needing a signal API. The handler writes the byte
    itself, rather than relying on ``signal.set_wakeup_fd``, because some loops (uvloop) claim
    the wake-up fd for themselves while they run. The handler runs in the main thread only, so
    a loop whose main thread waits for good while other threads run must wait in slices (the
    threads variant does: ``loops/threads/README.md``, "A signal's handler, on time").
    """

    def __init__(self, signals: Iterable[int] = (signal.SIGINT, signal.SIGTERM)) -> None:
        self.reader, self._writer = socket.socketpair()
        self.reader.setblocking(False)
        self._writer.setblocking(False)
        self.received: int | None = None  # the first signal number, once one arrived
        self._previous = {sig: signal.signal(sig, self._on_signal) for sig in signals}

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.received is None:
            self.received = signum
        # Full (a stop is already pending) or closed: nothing more to say.
        with contextlib.suppress(OSError):
            self._writer.send(b"\0")

    def close(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}
        self.reader.close()
        self._writer.close()

    def __enter__(self) -> StopSignals:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def check_flat(record: dict[str, Any]) -> dict[str, Scalar]:
    """Return record if every value is a scalar (and every float finite), else TypeError."""
    for key, value in record.items():
        if not isinstance(value, Scalar):
            raise TypeError(f"result field {key!r} is {type(value).__name__}, not a scalar")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"result field {key!r} is {value}, not a finite number")
    return record


def write_json(path: str | Path, record: dict[str, Any]) -> None:
    """Write one flat result record as JSON to path ('-' for stdout).

    Flat (scalars only), so the bench tabulates records of different workloads without knowing
    their shapes."""
    text = json.dumps(check_flat(record), indent=2) + "\n"
    if str(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def finish(record: dict[str, Any], json_path: str | None, summary: str) -> int:
    """End a workload CLI: write the record if asked, print the summary, return the exit status.

    The summary goes to stderr when the record goes to stdout (``--json -``), so stdout stays
    valid JSON. The status is 0 if ``record["ok"]``, else 1.
    """
    if json_path:
        write_json(json_path, record)
    print(summary, file=sys.stderr if json_path == "-" else sys.stdout, flush=True)
    return 0 if record["ok"] else 1


def number(kind: Callable[[str], Any], low: float, high: float = math.inf, low_open: bool = False):
    """An argparse type: kind(text) within [low, high] (or (low, high] if low_open)."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not (low < value if low_open else low <= value) or value > high:
            interval = f"{'(' if low_open else '['}{low}, {high}]"
            raise argparse.ArgumentTypeError(f"{text} is outside {interval}")
        return value

    parse.__name__ = getattr(kind, "__name__", "number")  # argparse names it in its errors
    return parse


def open_sockets(pid: int | None = None) -> list[str]:
    """The sockets a process holds (inet and unix), one readable line each."""
    import psutil

    return [
        f"fd {c.fd}: {c.family.name} {c.type.name} {c.laddr or '-'} -> {c.raddr or '-'} {c.status}"
        for c in psutil.Process(pid).net_connections(kind="all")
    ]


# The status a shell reports for a command ended by Ctrl-C (128 + SIGINT).
INTERRUPTED = 128 + signal.SIGINT


def interrupted(prog: str) -> int:
    """End a batch workload after KeyboardInterrupt: say so, and whether any socket was left
    open (the loop's own wake-up sockets included); return :data:`INTERRUPTED`.

    Call it once the run's own cleanup (``finally`` blocks, the loop's close) has happened.
    """
    left_open = open_sockets()
    if left_open:
        print(
            f"{prog}: interrupted; sockets left open:\n  " + "\n  ".join(left_open), file=sys.stderr
        )
    else:
        print(f"{prog}: interrupted; every socket closed", file=sys.stderr)
    return INTERRUPTED


def peak_rss_mib() -> float:
    """This process's peak resident set size so far, in MiB (its high-water mark since exec,
    not the fork-inherited ``ru_maxrss``: see :mod:`machine.proc`)."""
    return (peak_rss() or 0) / 2**20


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (fraction in [0, 1]) of already sorted values; 0.0 if none."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def positive(kind: type) -> Any:
    """An argparse type: `kind(text)` that must be above zero, else a usage error saying so."""

    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its error messages
    return parse


def port_number(text: str) -> int:
    """An argparse type: a TCP/UDP port number, 0 to 65535 (0: the OS picks a free one); out of
    range is a usage error, never a port wrapped around to another."""
    return number(int, 0, 65535)(text)
