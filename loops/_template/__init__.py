"""Scaffolds a new variant folder: `nox -s new -- NAME --style STYLE`.

The skeleton is generated from the Protocols in ``loops/contract.py``, so it always has every
contract method, with the contract's own one-line docstring, each raising a
``NotImplementedError`` that names the method and the file to write it in. A fresh scaffold is
discovered at once, and ``nox -s conformance -- --loop NAME`` fails with those messages
(the suite's summary lists what to implement next, most needed first).

This folder starts with ``_``, so it is not a variant itself.
"""

from __future__ import annotations

import argparse
import inspect
import keyword
import re
import sys
from pathlib import Path

from loops.contract import (
    STYLES,
    THREAD_ENTRIES,
    BlockingAPI,
    CallbacksLoop,
    CoroutinesAPI,
    Queue,
)

LOOPS = Path(__file__).resolve().parent.parent
NOT_YET = "is not implemented yet"
MODULE_FOR_STYLE = {
    "callbacks": "loop",
    "generators": "api",
    "coroutines": "api",
    "blocking": "api",
}


def _methods(protocol: type) -> list[tuple[str, inspect.Signature, str]]:
    """The protocol's public methods in the order the contract defines them."""
    return [
        (name, inspect.signature(member), inspect.getdoc(member) or "")
        for name, member in vars(protocol).items()
        if inspect.isfunction(member) and not name.startswith("_")
    ]


def _params(signature: inspect.Signature, *, drop_self: bool) -> str:
    # Annotations are dropped: the contract's refer to names the new module does not import.
    params = [
        p.replace(annotation=inspect.Parameter.empty)
        for p in list(signature.parameters.values())[1 if drop_self else 0 :]
    ]
    return str(signature.replace(parameters=params, return_annotation=inspect.Signature.empty))[
        1:-1
    ]


def _stub(name: str, owner: str, params: str, doc: str, prefix: str) -> str:
    indent = " " * (len(prefix) - len(prefix.lstrip()))
    return (
        f"{prefix}def {name}({params}):\n"
        f'{indent}    """{doc}"""\n'
        f'{indent}    raise _not_yet("{owner}{name}")\n'
    )


def _header(name: str, where: str, title: str) -> str:
    return f'''"""{name}: {title}. Scaffolded from loops/contract.py.

Replace each stub; the conformance suite says which one it needs next. The module docstring
should end up saying the idea, what it builds on and its limits.
"""

from __future__ import annotations

import collections
import selectors
import socket

WHERE = "{where}"


def _not_yet(what):
    """The error every stub raises until it is written."""
    return NotImplementedError(f"{{what}}() {NOT_YET}: write it in {{WHERE}}")
'''


# The loop's bones, as every home-made loop has them (DESIGN: state at the top with one-line
# comments, the turn in three marked stages) and as VARIANT's design declarations say, so the
# house's tests (tests/test_designs.py) hold of a scaffold the day it is made.
BONES = '''
    def __init__(self):
        self.ready = collections.deque()  # what runs this turn, FIFO
        self.timers = []  # heap of (when, seq, what): the next deadline first
        self.selector = selectors.DefaultSelector()  # the sockets waited on: readiness
        # A thread's write to this pair ends the selector's wait (run_in_thread's wake-up);
        # so does a signal's, once run() holds its turns in `with signals_wake(fd)`
        # (loops/_signals.py): the signal's Python handler then runs at once.
        self.wake_reader, self.wake_writer = socket.socketpair()
        self.selector.register(self.wake_reader, selectors.EVENT_READ)

    def _run_once(self):
        """One turn of the loop, in three stages."""
        # Stage 1: wait for I/O, no longer than until the next timer, not at all if work is ready.
        # Stage 2: expire the timers that are due.
        # Stage 3: run what was ready when the turn began (not what it makes ready).
        raise _not_yet("Loop._run_once")
'''


def callbacks_module(name: str) -> str:
    methods = "\n".join(
        _stub(method, "Loop.", _params(sig, drop_self=False), doc, "    ")
        for method, sig, doc in _methods(CallbacksLoop)
    )
    header = _header(name, f"loops/{name}/loop.py", "the callbacks-style loop")
    return f'''{header}

class Loop:
    """One event loop: a new one per call of the variant's callbacks factory."""
{BONES}
{methods}'''


def tasks_module(name: str, style: str) -> str:
    asynchronous = "async " if style == "coroutines" else ""
    protocol = BlockingAPI if style == "blocking" else CoroutinesAPI
    functions = "\n\n".join(
        _stub(fn, "", _params(sig, drop_self=True), doc, asynchronous)
        for fn, sig, doc in _methods(protocol)
        if fn not in ("run", "now")
    )
    queue = "\n".join(
        _stub(
            method,
            "Queue.",
            _params(sig, drop_self=False),
            doc,
            "    " + (asynchronous if method in ("put", "get", "join") else ""),
        )
        for method, sig, doc in _methods(Queue)
    )
    used_with = {"coroutines": "`await`", "generators": "`yield from`"}.get(style, "plain calls")
    header = _header(name, f"loops/{name}/api.py", f"the {style} style (used with {used_with})")
    run_signature, run_doc = next((sig, doc) for fn, sig, doc in _methods(protocol) if fn == "run")
    return f'''{header}

class CancelledError(BaseException):
    """Raised into a task at its suspension point when it is cancelled."""


class Loop:
    """The loop run() makes: its state, and its turn."""
{BONES}

def run({_params(run_signature, drop_self=True)}):
    """{run_doc}"""
    raise _not_yet("run")


def now():
    """The running loop's clock, in seconds."""
    raise _not_yet("now")


{functions}

class Queue:
    """A FIFO queue for tasks, with unfinished-work accounting (asyncio.Queue's semantics)."""

{queue}'''


def init_module(name: str, style: str) -> str:
    module = MODULE_FOR_STYLE[style]
    entry = f"{module}.Loop" if style == "callbacks" else module
    entries = ("run_in_thread",) if style != "callbacks" else THREAD_ENTRIES
    return f'''"""{name}: TODO, one paragraph: the idea, what it builds on, its limits."""

from loops.contract import Variant

from . import {module}

VARIANT = Variant(
    name="{name}",
    summary="TODO: one line, shown in the README table and the reports",
    lineage="TODO: the idea and where it comes from",
    # Claim what passes; see loops.contract.CAPABILITIES for the names.
    capabilities=frozenset({{"core"}}),
    {style}={entry},
    # The design, as tests/test_designs.py checks it against this folder's code and the
    # designs table in loops/README.md shows it (loops/contract.py says what each field holds).
    io_model="readiness",  # or "completion"
    waits_in="selectors.DefaultSelector",  # the call the loop sleeps in with nothing to run
    wake_up="socketpair",  # what a thread writes to end that sleep ("socketpair", "eventfd")
    thread_entries={entries},  # what another thread may call
    cancellation="TODO: how a cancel reaches a waiting task, naming the code in backquotes",
    # Keys of REPORTING, GHOST_FDS and SOCKET_CALLS in the contract: what a bare selectors
    # loop does, until this one does better (then say so here, and tests/test_designs.py checks).
    reporting="epoll-level",  # how the wait reports I/O
    ghost_fds="spins",  # a closed fd its wait still reports: the io claim then needs a deviation
    socket_call_first="tries",  # what recv does before it waits
)
'''


README = """# {name}

TODO, five lines: what to read first, what this loop teaches, its limits.

Scaffolded with `nox -s new -- {name} --style {style}`. Next: `nox -s conformance -- --loop
{name}` lists what to implement, most needed first; claim capabilities in `__init__.py` as
they pass; write known deviations (with their reasons) in `deviations.toml`. The steps from
here to every report: [`loops/_template/README.md`](../_template/README.md).

**What this design is good for, what it costs, what it gives up.** TODO: what it suits; it
costs <!-- figures:cost:{name} -->(not counted yet: `python -m bench anatomy --loop {name}` \
counts it)<!-- /figures -->; against asyncio-protocol it gives up TODO, against
uvloop-protocol TODO.
"""


def scaffold(name: str, style: str, into: Path = LOOPS) -> Path:
    """Create into/name/ with the skeleton for style; refuse to overwrite anything."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name):
        raise ValueError(f"variant name {name!r} must be a lowercase Python identifier")
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; styles are {', '.join(STYLES)}")
    folder = into / name
    if folder.exists():
        raise FileExistsError(f"{folder} already exists; pick another name or remove it")
    folder.mkdir(parents=True)
    body = callbacks_module(name) if style == "callbacks" else tasks_module(name, style)
    (folder / f"{MODULE_FOR_STYLE[style]}.py").write_text(body)
    (folder / "__init__.py").write_text(init_module(name, style))
    (folder / "README.md").write_text(README.format(name=name, style=style))
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nox -s new --", description=__doc__.split("\n")[0])
    parser.add_argument("name", help="the variant's name, a lowercase identifier")
    parser.add_argument("--style", required=True, choices=STYLES, help="the style it speaks")
    parser.add_argument("--into", type=Path, default=LOOPS, help="parent folder (default loops/)")
    args = parser.parse_args(argv)
    try:
        folder = scaffold(args.name, args.style, args.into)
    except (ValueError, FileExistsError) as error:
        parser.exit(2, f"error: {error}\n")
    print(f"created {folder}/ ({', '.join(sorted(p.name for p in folder.iterdir()))})")
    print(f"next: nox -s conformance -- --loop {args.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
