"""The cancellation race on asyncio's API: a thread feeds a socket while a task reads it under
timeouts and sibling cancellations, and everything sent must arrive.

A thread, not a task, is the sender, so a chunk (or a connection) can land in the socket at any
moment, including the turn where the loop sees the socket ready and the reader's deadline pass
together: where asyncio's and uvloop's ``sock_recv`` lose the bytes (CPython issue 78976). Used
by ``conformance/test_cancellation.py`` and as a command that measures the loss; the plans and
the commands: ``conformance/README.md``, "The cancellation race".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import platform
import random
import socket
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

MiB = 1024 * 1024
CALLS = ("sock_recv", "sock_recv_into", "stream", "sock_accept")
READ_SIZE = 64 * 1024  # bytes asked for per read
STREAM_LIMIT = 1024  # the StreamReader's limit: it pauses its transport past twice this


@dataclass(frozen=True)
class Plan:
    """How hard the race is played. The defaults are the conformance property's."""

    min_bytes: int = 2 * MiB  # the sender sends at least this (sock_accept: connections)
    max_bytes: int = 5 * MiB  # then single bytes (connections: one each) only while needed
    chunk: tuple[int, int] = (1, 4096)  # bytes per send, uniform
    # Seconds between sends, uniform: gaps longer than most deadlines, so that attempts are
    # interrupted, and sends that land in every part of a deadline's poll.
    interval: tuple[float, float] = (0.0002, 0.002)
    timeout: tuple[float, float] = (0.0, 0.001)  # each attempt's deadline or cancel delay
    interruptions: int = 500  # at least this many timeouts, and as many sibling cancellations
    siblings: bool = True  # every other attempt is cancelled by a sibling task
    seed: int = 0


PLANS = {
    "property": Plan(),
    # For sock_accept: connections, not bytes, each a connect() by the thread.
    "property-accept": Plan(min_bytes=1000, max_bytes=1000, chunk=(1, 1)),
    # The race as a user first met it: single bytes at 0.2-1.5 ms, a 1 ms timeout.
    "issue": Plan(
        min_bytes=1500,
        max_bytes=1500,
        chunk=(1, 1),
        interval=(0.0002, 0.0015),
        timeout=(0.001, 0.001),
        interruptions=0,
        siblings=False,
    ),
}


@dataclass
class Outcome:
    """What one race sent and received (bytes, or connections for sock_accept)."""

    call: str
    sent: int = 0
    received: int = 0
    sent_sha256: str = ""
    received_sha256: str = ""
    counts: dict[str, int] = field(default_factory=lambda: {"timeouts": 0, "cancellations": 0})
    loop_errors: list[str] = field(default_factory=list)  # what reached the exception handler

    @property
    def lost(self) -> int:
        return self.sent - self.received

    def verdict(self, plan: Plan) -> dict[str, Any]:
        """The property's view: what was lost, whether the stream is intact, whether the
        race was played hard enough."""
        return {
            "lost": self.lost,
            "sha256 equal": self.sent_sha256 == self.received_sha256,
            "timeouts enough": self.counts["timeouts"] >= plan.interruptions,
            "cancellations enough": not plan.siblings
            or self.counts["cancellations"] >= plan.interruptions,
            "loop errors": len(self.loop_errors),
        }


INTACT = {
    "lost": 0,
    "sha256 equal": True,
    "timeouts enough": True,
    "cancellations enough": True,
    "loop errors": 0,
}


def _enough(outcome: Outcome, plan: Plan) -> bool:
    counts = outcome.counts
    return counts["timeouts"] >= plan.interruptions and (
        not plan.siblings or counts["cancellations"] >= plan.interruptions
    )


# -- the sender: a thread ----------------------------------------------------------------------


def _feed_bytes(sock: socket.socket, plan: Plan, outcome: Outcome, stop: threading.Event) -> None:
    """Send random chunks at random intervals, then shut the socket's write side (EOF)."""
    rng = random.Random(plan.seed)
    digest = hashlib.sha256()
    try:
        while not stop.is_set():
            if outcome.sent >= plan.min_bytes and _enough(outcome, plan):
                break
            if outcome.sent >= plan.max_bytes and plan.interruptions == 0:
                break
            size = 1 if outcome.sent >= plan.max_bytes else rng.randint(*plan.chunk)
            data = rng.randbytes(size)
            sock.sendall(data)
            digest.update(data)
            outcome.sent += size
            stop.wait(rng.uniform(*plan.interval))
    finally:
        outcome.sent_sha256 = digest.hexdigest()
        with contextlib.suppress(OSError):  # the reader may have gone first (a failed race)
            sock.shutdown(socket.SHUT_WR)


def _connect_many(address: Any, plan: Plan, outcome: Outcome, stop: threading.Event) -> None:
    """connect() to address again and again at random intervals (each closed at once: the
    connection stays queued for accept all the same)."""
    rng = random.Random(plan.seed)
    while not stop.is_set():
        if outcome.sent >= plan.min_bytes and _enough(outcome, plan):
            break
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(address)
        outcome.sent += 1
        stop.wait(rng.uniform(*plan.interval))
    outcome.sent_sha256 = str(outcome.sent)  # connections: the count is the digest


# -- the reader: a task under timeouts and sibling cancellations ------------------------------


async def _interrupted(
    read: Callable[[], Awaitable[Any]], plan: Plan, outcome: Outcome, rng: random.Random
) -> AsyncIterator[Any]:
    """Each result of read() until it gives None (the end), every attempt under a timeout or,
    every other one, a sibling's cancel; the interruptions are counted in outcome."""
    counts = outcome.counts
    while True:
        delay = rng.uniform(*plan.timeout)
        # The kind that is behind plays next, so both reach plan.interruptions together.
        if plan.siblings and counts["cancellations"] < counts["timeouts"]:
            reading = asyncio.ensure_future(read())

            async def cancel_later(task: asyncio.Future = reading, delay: float = delay) -> None:
                await asyncio.sleep(delay)
                task.cancel()

            sibling = asyncio.ensure_future(cancel_later())
            try:
                result = await reading
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():
                    raise  # the race itself was cancelled
                counts["cancellations"] += 1
                continue
            finally:
                sibling.cancel()
        else:
            try:
                async with asyncio.timeout(delay):
                    result = await read()
            except TimeoutError:
                counts["timeouts"] += 1
                continue
        if result is None:
            return
        yield result


async def race(call: str, plan: Plan) -> Outcome:
    """Play the race once on the running loop with `call`; what was sent and received."""
    if call not in CALLS:
        raise ValueError(f"unknown call {call!r}; calls are {', '.join(CALLS)}")
    loop = asyncio.get_running_loop()
    outcome = Outcome(call)
    # Counted, not printed: asyncio's sock_accept callback raises InvalidStateError when its
    # future was cancelled first (gh-153761), once per connection it drops.
    loop.set_exception_handler(lambda _, context: outcome.loop_errors.append(_describe(context)))
    stop = threading.Event()
    rng = random.Random(plan.seed + 1)
    if call == "sock_accept":
        return await _race_accept(loop, plan, outcome, stop, rng)
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    sender = threading.Thread(target=_feed_bytes, args=(theirs, plan, outcome, stop))
    digest = hashlib.sha256()
    writer = None
    try:
        if call == "stream":
            # A small limit: the reader's flow control pauses and resumes the transport all
            # through the race (above 2 x limit buffered), so that path is played too.
            reader, writer = await asyncio.open_connection(sock=ours, limit=STREAM_LIMIT)

            async def read() -> bytes | None:
                return await reader.read(READ_SIZE) or None

        elif call == "sock_recv":

            async def read() -> bytes | None:
                return await loop.sock_recv(ours, READ_SIZE) or None

        else:
            buffer = bytearray(READ_SIZE)

            async def read() -> bytes | None:
                n = await loop.sock_recv_into(ours, buffer)
                return bytes(buffer[:n]) if n else None

        sender.start()
        async for data in _interrupted(read, plan, outcome, rng):
            outcome.received += len(data)
            digest.update(data)
    finally:
        stop.set()
        if writer is not None:
            writer.close()  # our end closed first: a sender blocked in sendall gets EPIPE
        else:
            ours.close()
        if sender.is_alive():
            await loop.run_in_executor(None, sender.join)
        theirs.close()
    outcome.received_sha256 = digest.hexdigest()
    return outcome


async def _race_accept(
    loop: asyncio.AbstractEventLoop,
    plan: Plan,
    outcome: Outcome,
    stop: threading.Event,
    rng: random.Random,
) -> Outcome:
    address = f"\0lab-race-{os.getpid()}-{random.getrandbits(48):x}"  # abstract: no file
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(128)
    listener.setblocking(False)
    sender = threading.Thread(target=_connect_many, args=(address, plan, outcome, stop))
    finished = threading.Event()  # set once every connect() has returned

    async def accept() -> socket.socket | None:
        if finished.is_set():
            return None  # the rest is counted from the backlog below
        conn, _ = await loop.sock_accept(listener)
        return conn

    sender.start()
    sender_done = loop.run_in_executor(None, lambda: (sender.join(), finished.set()))
    try:
        async for conn in _interrupted(accept, plan, outcome, rng):
            conn.close()
            outcome.received += 1
        while True:  # every connect() has returned: what was not accepted waits here
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                break
            conn.close()
            outcome.received += 1
    finally:
        stop.set()
        await sender_done
        listener.close()
    outcome.received_sha256 = str(outcome.received)
    return outcome


def _describe(context: dict) -> str:
    error = context.get("exception")
    return f"{context.get('message')}: {type(error).__name__}" if error else context["message"]


def play(loop_factory: Callable[[], asyncio.AbstractEventLoop], call: str, plan: Plan) -> Outcome:
    """One race on a fresh loop from loop_factory."""
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(race(call, plan))


# -- the command --------------------------------------------------------------------------------


def table(path: str) -> str:
    """Markdown tables (one per plan) of what the races stored in path (JSON lines) lost: per
    loop and call, per interpreter, "lost of sent (runs that lost / runs)"."""
    with open(path) as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    out = []
    for plan in dict.fromkeys(r["plan"] for r in records):
        mine = [r for r in records if r["plan"] == plan]
        pythons = list(dict.fromkeys(r["python"] for r in mine))
        unit = {"sock_accept": "connections"}
        out += [f"Plan `{plan}`:", "", "| loop | call | " + " | ".join(pythons) + " |"]
        out.append("|---|---|" + "---|" * len(pythons))
        for loop, call in dict.fromkeys((r["loop"], r["call"]) for r in mine):
            cells = []
            for python in pythons:
                runs = [
                    r for r in mine if (r["loop"], r["call"], r["python"]) == (loop, call, python)
                ]
                if not runs:
                    cells.append("—")
                    continue
                lost, sent = sum(r["lost"] for r in runs), sum(r["sent"] for r in runs)
                lossy = sum(r["lost"] > 0 for r in runs)
                what = unit.get(call, "bytes")
                errors = sum(len(r["loop_errors"]) for r in runs)
                told = f"; {errors} to the exception handler" if errors else ""
                cells.append(f"{lost:,} of {sent:,} {what} ({lossy}/{len(runs)}{told})")
            out.append(f"| {loop} | {call} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import loops  # here, not at the top: the property imports this module inside the suite

    parser = argparse.ArgumentParser(prog="python -m conformance.race", description=__doc__)
    parser.add_argument("--loop", action="append", help="a variant with an asyncio loop")
    parser.add_argument("--call", action="append", choices=CALLS)
    parser.add_argument("--plan", choices=("property", "issue"), default="property")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="append one JSON line per race")
    parser.add_argument(
        "--table", metavar="FILE", help="print the tables of FILE's races, run none"
    )
    args = parser.parse_args(argv)
    if args.table:
        print(table(args.table))
        return 0
    names = args.loop or [n for n, v in loops.discover().items() if v.asyncio_loop is not None]
    calls = args.call or (["sock_recv"] if args.plan == "issue" else list(CALLS))
    python = platform.python_version()
    print(f"# Python {python}; plan {args.plan}; {args.runs} runs per loop and call")
    print("loop\tcall\tsent\tlost\truns with loss\ttimeouts\tcancellations")
    for name in names:
        factory = loops.get(name).asyncio_loop
        for call in calls:
            plan = PLANS["property-accept" if call == "sock_accept" else "property"]
            plan = PLANS["issue"] if args.plan == "issue" else plan
            outcomes = [play(factory, call, replace(plan, seed=run)) for run in range(args.runs)]
            sent, lost = sum(o.sent for o in outcomes), sum(o.lost for o in outcomes)
            lossy = sum(o.lost > 0 for o in outcomes)
            timeouts = sum(o.counts["timeouts"] for o in outcomes)
            cancels = sum(o.counts["cancellations"] for o in outcomes)
            print(f"{name}\t{call}\t{sent}\t{lost}\t{lossy}/{args.runs}\t{timeouts}\t{cancels}")
            if args.json:
                with open(args.json, "a") as out:
                    for run, o in enumerate(outcomes):
                        record = asdict(o) | {"lost": o.lost, "loop": name, "run": run}
                        record |= {"python": python, "plan": args.plan}
                        out.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
