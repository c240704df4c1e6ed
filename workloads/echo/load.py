"""The echo load generator: N connections, each a send-then-read-the-whole-echo loop.

    python -m workloads.echo.load --port P --connections N --size BYTES --duration S
        [--rate R] [--generator auto|native|python] [--host H] [--udp | --tls]
        [--processes K] [--timeout S] [--seed N] [--warmup S] [--json FILE]
        [--server-pid PID]

It runs in its own process(es), never on the loop under test, verifies every byte, and reads
the server's CPU over the load window alone. The native generator is C on epoll
(:mod:`workloads.echo.loadgen`); the Python one, on uvloop, is the fallback and speaks UDP.
``--tls`` speaks TLS without verifying the server's certificate (the echo server makes a
self-signed one at start); every handshake is done before the load window opens.
Closed loop or ``--rate``, its exit status and its JSON record: ``workloads/README.md``.
"""

from __future__ import annotations

import abc
import argparse
import asyncio
import contextlib
import multiprocessing
import random
import socket
import ssl
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from hdrh.histogram import HdrHistogram

from machine.proc import context_switches, on_cpu, raise_open_file_limit
from workloads.common import finish, port_number, positive

# Round trips from 1 µs to 60 s, 3 significant digits.
LATENCY_RANGE_US = (1, 60_000_000, 3)
# Messages start at one of this many offsets into the payload buffer.
OFFSETS = 256
SATURATED = 0.9
KEPT_RATE = 0.95  # share of the scheduled requests a server must complete to "keep the rate"
UDP_MAX = 65507
GENERATORS = ("auto", "native", "python")


@dataclass
class Outcome:
    """What one generator process reports back (picklable, merged by the parent)."""

    requests: int = 0
    scheduled: int = 0
    bytes_echoed: int = 0
    corrupt: int = 0
    missing: int = 0
    failed: int = 0
    first_error: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    histogram: bytes = b""
    # The round trips' sum, as recorded: the mean from it is exact and costs nothing, where
    # the histogram's own mean walks every bucket (a tenth of a second per run).
    latency_total_us: int = 0

    def error(self, kind: str, text: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if not self.first_error:
            self.first_error = text


class Run:
    """State shared by one process's connections: the payload, the clock, the tallies."""

    def __init__(self, config: dict) -> None:
        self.size = config["size"]
        self.payload = random.Random(config["seed"]).randbytes(self.size + OFFSETS)
        self.timeout = config["timeout"]
        self.rate = config.get("rate")  # offered requests/s over all connections, or None
        self.total = config["connections"]  # connections over all processes
        self.duration_ns = int(config["duration"] * 1e9)
        self.start_ns = 0  # set when the load starts
        self.deadline = float("inf")  # set when the load starts
        self.outcome = Outcome()
        self.histogram = HdrHistogram(*LATENCY_RANGE_US)

    def slot_ns(self, index: int, seq: int) -> int:
        """Open loop: when connection `index` sends message `seq` (perf_counter ns)."""
        return self.start_ns + int((index + seq * self.total) / self.rate * 1e9)

    def schedule(self, indices: list[int]) -> None:
        """Start the clock; count the requests scheduled within the window (open loop)."""
        self.start_ns = time.perf_counter_ns()
        self.deadline = time.monotonic() + self.duration_ns / 1e9
        if self.rate:
            end = self.start_ns + self.duration_ns
            for index in indices:
                seq = 0
                while self.slot_ns(index, seq) < end:
                    seq += 1
                self.outcome.scheduled += seq

    def message(self, index: int, seq: int) -> tuple[int, bytes]:
        offset = (seq * 31 + index * 7) % OFFSETS
        return offset, self.payload[offset : offset + self.size]

    def completed(self, started_ns: int) -> None:
        self.outcome.requests += 1
        self.outcome.bytes_echoed += self.size
        elapsed_us = min(max(1, (time.perf_counter_ns() - started_ns) // 1000), LATENCY_RANGE_US[1])
        self.histogram.record_value(elapsed_us)
        self.outcome.latency_total_us += elapsed_us


class Client(abc.ABC):
    """What both kinds of client share: start, and end once, cleanly or with an error."""

    def __init__(self, run: Run, index: int, done: asyncio.Future) -> None:
        self.run, self.index, self.done = run, index, done
        self.seq = 0  # requests sent so far
        self.in_flight = False  # a request is out and its echo not yet complete
        self.started_ns = 0
        self.transport = None
        self.waiting: asyncio.TimerHandle | None = None  # open loop: the next send's timer
        self.priming: asyncio.Future | None = None  # the first byte's echo, before the load

    def connection_made(self, transport) -> None:
        self.transport = transport

    def prime(self) -> asyncio.Future:
        """Send one byte before the load; the future is done when its echo is back."""
        self.priming = asyncio.get_running_loop().create_future()
        self.in_flight = True
        self.write_bytes(self.run.payload[:1])
        return self.priming

    def primed(self, data: bytes) -> None:
        """The first byte's echo arrived (or something else did)."""
        if data != self.run.payload[:1]:
            return self.fail("corrupt", f"connection {self.index}: wrong echo of its first byte")
        self.in_flight = False
        self.priming.set_result(None)
        self.priming = None

    @abc.abstractmethod
    def write_bytes(self, data: bytes) -> None:
        """Put bytes on the wire (TCP: the stream; UDP: one datagram)."""

    def start(self) -> None:
        self.send_next()

    def send_next(self) -> None:
        """The next request: at once (closed loop) or at its scheduled time (``--rate``)."""
        if not self.run.rate:
            if time.monotonic() >= self.run.deadline:
                return self.finish()
            return self.send(time.perf_counter_ns())
        slot, now = self.run.slot_ns(self.index, self.seq), time.perf_counter_ns()
        end = self.run.start_ns + self.run.duration_ns
        if slot >= end or now >= end:  # nothing goes out after the window, even if late
            return self.finish()
        delay = (slot - now) / 1e9
        if delay <= 0:
            return self.send(slot)
        # On waking, check the window again: a timer that fires late sends nothing after it.
        self.waiting = asyncio.get_running_loop().call_later(delay, self.send_next)

    @abc.abstractmethod
    def send(self, started_ns: int) -> None:
        """Send the next request, timed from `started_ns` (TCP: a message; UDP: a datagram)."""

    def fail(self, kind: str, text: str) -> None:
        if not self.done.done():
            self.run.outcome.error(kind, text)
            self.done.set_result(None)
        if self.priming is not None and not self.priming.done():
            self.priming.set_result(None)
        if self.waiting is not None:
            self.waiting.cancel()
        self.transport.abort()

    def finish(self) -> None:
        """This connection's load is over; it stays open until the server's CPU is read."""
        if not self.done.done():
            self.done.set_result(None)

    def close(self) -> None:
        if self.waiting is not None:
            self.waiting.cancel()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


class TcpClient(Client, asyncio.Protocol):
    """One connection: send a message, read its whole echo, verify it, repeat."""

    def __init__(self, run: Run, index: int, done: asyncio.Future) -> None:
        super().__init__(run, index, done)
        self.offset = 0  # where the current message starts in the payload
        self.received = 0  # bytes of the current echo received so far

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, started_ns: int) -> None:
        if self.done.done():
            return
        self.offset, message = self.run.message(self.index, self.seq)
        self.seq += 1
        self.received = 0
        self.in_flight = True
        self.started_ns = started_ns
        self.transport.write(message)

    def write_bytes(self, data: bytes) -> None:
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        if self.priming is not None:
            return self.primed(data)
        start = self.offset + self.received
        end = start + len(data)
        if not self.in_flight or self.received + len(data) > self.run.size:
            return self.fail("corrupt", f"connection {self.index}: {len(data)} bytes too many")
        if data != self.run.payload[start:end]:
            return self.fail("corrupt", f"connection {self.index}: echo differs from what it sent")
        self.received += len(data)
        if self.received == self.run.size:
            self.in_flight = False
            self.run.completed(self.started_ns)
            self.send_next()

    def eof_received(self) -> bool:
        if self.in_flight:
            self.fail("missing", f"connection {self.index}: EOF with the echo incomplete")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            text = f"connection {self.index}: lost ({exc or 'closed by the server'})"
            self.fail("missing" if self.in_flight else "failed", text)

    def timed_out(self) -> None:
        self.fail("missing", f"connection {self.index}: no full echo within {self.run.timeout} s")


class UdpClient(Client, asyncio.DatagramProtocol):
    """One connected UDP socket: send a datagram, verify its echo, repeat."""

    def __init__(self, run: Run, index: int, done: asyncio.Future) -> None:
        super().__init__(run, index, done)
        self.expected = b""  # the datagram in flight

    def send(self, started_ns: int) -> None:
        if self.done.done():
            return
        _, self.expected = self.run.message(self.index, self.seq)
        self.seq += 1
        self.in_flight = True
        self.started_ns = started_ns
        self.transport.sendto(self.expected)

    def write_bytes(self, data: bytes) -> None:
        self.transport.sendto(data)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        if self.priming is not None:
            return self.primed(data)
        if not self.in_flight or data != self.expected:
            return self.fail("corrupt", f"socket {self.index}: echo differs from what it sent")
        self.in_flight = False
        self.run.completed(self.started_ns)
        self.send_next()

    def error_received(self, exc: Exception) -> None:
        self.fail("failed", f"socket {self.index}: {exc}")

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self.fail("failed", f"socket {self.index}: {exc}")

    def timed_out(self) -> None:
        self.fail("missing", f"socket {self.index}: datagram lost, no echo in {self.run.timeout} s")


def client_context() -> ssl.SSLContext:
    """TLS that does not verify: the echo server's certificate is self-signed, made at start."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def _load(run: Run, config: dict, indices: list[int], ready, ended) -> None:
    """Connect and prime this process's share, wait for every process, load, then close.

    ``ended(outcome)`` runs between the last echo and the first close (it blocks: a barrier
    across processes, or the server's CPU sample).
    """
    loop = asyncio.get_running_loop()
    address = (config["host"], config["port"])
    # The handshake completes before connection_made: it stays out of the window.
    tls = {"ssl": client_context()} if config.get("tls") else {}
    clients = []
    for index in indices:
        done = loop.create_future()
        try:
            if config["udp"]:
                _, client = await loop.create_datagram_endpoint(
                    lambda i=index, d=done: UdpClient(run, i, d), remote_addr=address
                )
            else:
                _, client = await loop.create_connection(
                    lambda i=index, d=done: TcpClient(run, i, d), *address, **tls
                )
        except (OSError, ssl.SSLError) as error:
            run.outcome.error("failed", f"connection {index}: cannot connect: {error}")
            continue
        clients.append(client)
    if clients:
        # The server accepts and watches every connection before the window opens.
        primes = [client.prime() for client in clients]
        _, unprimed = await asyncio.wait(primes, timeout=run.timeout)
        for client in clients:
            if client.priming is not None and client.priming in unprimed:
                text = f"connection {client.index}: no echo of its first byte in {run.timeout} s"
                client.fail("missing", text)
    await loop.run_in_executor(None, ready)  # a barrier across processes: block off the loop

    cpu_start, wall_start = time.process_time(), time.perf_counter()
    run.schedule(indices)
    for client in clients:
        if not client.done.done():
            client.start()
    pending = {client.done for client in clients}
    # A request still in flight when the time is up gets `timeout` seconds to come back; a
    # request that hangs mid-run is caught the same way, just later.
    while pending:
        left = run.deadline + run.timeout - time.monotonic()
        _, pending = await asyncio.wait(pending, timeout=max(left, 0))
        if pending and left <= 0:
            for client in clients:
                if not client.done.done():
                    client.timed_out()
            break
    run.outcome.wall_s = time.perf_counter() - wall_start
    run.outcome.cpu_s = time.process_time() - cpu_start
    run.outcome.histogram = run.histogram.encode()
    await loop.run_in_executor(None, ended, run.outcome)
    for client in clients:
        client.close()


def generate(config: dict, indices: list[int], ready, ended=lambda outcome: None) -> Outcome:
    """One process's share of the load, on uvloop; returns what it measured."""
    import uvloop

    run = Run(config)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(_load(run, config, indices, ready, ended))
    return run.outcome


def _child(config: dict, indices: list[int], barriers, results) -> None:
    """One generator process: its outcome goes to the parent, which reads the server's CPU
    once every process has reported, before any closes (the second barrier)."""
    start, close = barriers
    reported = False

    def report(outcome: Outcome) -> None:
        nonlocal reported
        results.put(asdict(outcome))
        reported = True
        close.wait(timeout=60)

    try:
        generate(config, indices, start.wait, report)
    except BaseException as error:  # report instead of leaving the parent waiting
        start.abort()
        close.abort()
        if not reported:
            results.put(asdict(Outcome(failed=1, first_error=f"generator process: {error!r}")))


class ServerCpu:
    """The server process's CPU seconds and context switches over the load, if we were given
    its pid.

    On Linux the CPU is the scheduler's exact figure (:func:`machine.proc.on_cpu`): the
    ``cpu_times`` psutil reads count 10 ms ticks, which at a fixed offered load (a server
    busy a fifth of the time over two seconds) would leave a few percent of error. Both are
    summed over the server's live threads, read while every connection is open: a server with
    a thread per connection ends those threads when the load closes, and they take their
    counts with them.
    """

    def __init__(self, pid: int | None) -> None:
        self.process = None
        self.pid = pid
        if pid is not None:
            import psutil

            self.process = psutil.Process(pid)
        self.start = self.end = 0.0
        self.switched: tuple[int, int] | None = None
        self.switches: dict[str, int] | None = None

    def _sample(self) -> float:
        if self.process is None:
            return 0.0
        precise = on_cpu(self.pid)
        if precise is not None:
            return precise
        times = self.process.cpu_times()
        return times.user + times.system

    def begin(self) -> None:
        self.start = self._sample()
        self.switched = None if self.process is None else context_switches(self.pid)

    def finish(self) -> None:
        self.end = self._sample()
        after = None if self.process is None else context_switches(self.pid)
        if self.switched is not None and after is not None:
            voluntary, involuntary = (a - b for a, b in zip(after, self.switched, strict=True))
            self.switches = {"voluntary": voluntary, "involuntary": involuntary}

    @property
    def seconds(self) -> float | None:
        return None if self.process is None else self.end - self.start


def choose_generator(config: dict) -> tuple[str, str, Any]:
    """("native" or "python", why the Python one runs ("" if asked for), the native binary)."""
    if config["generator"] == "python":
        return "python", "", None
    if config["udp"]:
        why = "the native generator speaks TCP only"
        binary = None
    else:
        from workloads.echo import loadgen

        binary, why = loadgen.build(tls=bool(config.get("tls")))
    if binary is None and config["generator"] == "native":
        raise GeneratorUnavailable(f"--generator native: {why}")
    return ("native", "", binary) if binary is not None else ("python", why, None)


class GeneratorUnavailable(RuntimeError):
    """``--generator native`` was asked for and cannot be built here."""


def native_outcomes(
    binary: Any, config: dict, shares: list[list[int]], started, ended
) -> list[dict]:
    """Run the C generator and turn each process's report into an Outcome record."""
    from workloads.echo import loadgen

    try:
        reports = loadgen.generate(binary, config, shares, started, ended=ended)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
        return [asdict(Outcome(failed=1, first_error=str(error)))]
    outcomes = []
    for report in reports:
        histogram, total_us = HdrHistogram(*LATENCY_RANGE_US), 0
        for us, count in report["histogram"]:
            us = min(max(1, us), LATENCY_RANGE_US[1])
            histogram.record_value(us, count)
            total_us += us * count
        outcome = Outcome(
            requests=report["requests"],
            scheduled=report["scheduled"],
            bytes_echoed=report["requests"] * config["size"],
            corrupt=report["corrupt"],
            missing=report["missing"],
            failed=report["failed"],
            first_error=report.get("first_error", ""),
            wall_s=report["wall_s"],
            cpu_s=report["cpu_s"],
            histogram=histogram.encode(),
            latency_total_us=total_us,
        )
        outcomes.append(asdict(outcome))
    return outcomes


def run_load(config: dict) -> dict:
    """Run the whole load (one or more processes) and return the flat result record."""
    generator, note, binary = choose_generator(config)
    if note:
        print(f"echo load: using the Python generator: {note}", file=sys.stderr)
    processes = min(config["processes"], config["connections"])
    shares = [list(range(k, config["connections"], processes)) for k in range(processes)]
    server = ServerCpu(config["server_pid"])
    if generator == "native":
        outcomes = native_outcomes(binary, config, shares, server.begin, server.finish)
    elif processes == 1:
        outcomes = [asdict(generate(config, shares[0], server.begin, lambda _: server.finish()))]
    else:
        outcomes = _run_processes(config, shares, server)
    return summarize(config, outcomes, server.seconds, generator, note, server.switches)


def _run_processes(config: dict, shares: list[list[int]], server: ServerCpu) -> list[dict]:
    context = multiprocessing.get_context("spawn")
    barriers = (context.Barrier(len(shares) + 1), context.Barrier(len(shares) + 1))
    results = context.Queue()
    children = [
        context.Process(target=_child, args=(config, share, barriers, results), daemon=True)
        for share in shares
    ]
    for child in children:
        child.start()
    # A child that failed before the start breaks the barrier; its outcome says why.
    with contextlib.suppress(threading.BrokenBarrierError):
        barriers[0].wait(timeout=60)
    server.begin()
    limit = config["duration"] + config["timeout"] + 60
    outcomes = [results.get(timeout=limit) for _ in children]
    server.finish()  # every process has reported; none has closed a connection yet
    with contextlib.suppress(threading.BrokenBarrierError):
        barriers[1].wait(timeout=60)
    for child in children:
        child.join(timeout=10)
    return outcomes


def summarize(
    config: dict,
    outcomes: list[dict],
    server_cpu_s: float | None,
    generator: str = "python",
    note: str = "",
    server_switches: dict[str, int] | None = None,
) -> dict:
    """Merge the processes' outcomes into the flat record documented above."""
    histogram = HdrHistogram(*LATENCY_RANGE_US)
    for outcome in outcomes:
        if outcome["histogram"]:
            histogram.add(HdrHistogram.decode(outcome["histogram"]))
    wall = max(o["wall_s"] for o in outcomes) or 1e-9
    requests = sum(o["requests"] for o in outcomes)
    echoed = sum(o["bytes_echoed"] for o in outcomes)
    counts = {k: sum(o[k] for o in outcomes) for k in ("corrupt", "missing", "failed")}
    errors = sum(counts.values())
    load_share = max(o["cpu_s"] / o["wall_s"] if o["wall_s"] else 0.0 for o in outcomes)
    load_cpu = sum(o["cpu_s"] for o in outcomes)
    rate = config.get("rate")
    scheduled = sum(o.get("scheduled", 0) for o in outcomes) if rate else None

    def per_request_us(seconds: float | None) -> float | None:
        return None if seconds is None or not requests else round(seconds / requests * 1e6, 3)

    def latency(percent: float) -> int:
        return histogram.get_value_at_percentile(percent) if requests else 0

    return {
        "workload": "echo-load",
        "transport": "udp" if config["udp"] else "tcp",
        # TLS on every connection, each handshake done before the window (the figures are
        # steady-state requests)
        "tls": bool(config.get("tls")),
        "host": config["host"],
        "port": config["port"],
        "connections": config["connections"],
        "size": config["size"],
        "duration_s": config["duration"],
        "processes": len(outcomes),
        "seed": config["seed"],
        "timeout_s": config["timeout"],
        "wall_s": round(wall, 6),
        "requests": requests,
        "requests_per_s": round(requests / wall, 1),
        "bytes_echoed": echoed,
        "mib_per_s": round(echoed / wall / 2**20, 3),
        "latency_us_p50": latency(50),
        "latency_us_p90": latency(90),
        "latency_us_p99": latency(99),
        "latency_us_p999": latency(99.9),
        "latency_us_max": histogram.get_max_value() if requests else 0,
        "latency_us_mean": (
            round(sum(o["latency_total_us"] for o in outcomes) / requests, 1) if requests else 0.0
        ),
        "errors": errors,
        **counts,
        "first_error": next((o["first_error"] for o in outcomes if o["first_error"]), ""),
        "server_pid": config["server_pid"],
        "server_cpu_s": None if server_cpu_s is None else round(server_cpu_s, 4),
        "server_cpu_share": None if server_cpu_s is None else round(server_cpu_s / wall, 3),
        "server_cpu_us_per_request": per_request_us(server_cpu_s),
        # The server's context switches over the window (None without its pid).
        **{
            f"server_switches_{kind}": (server_switches or {}).get(kind)
            for kind in ("voluntary", "involuntary")
        },
        "generator": generator,
        "generator_note": note,
        "load_loop": "epoll (C)" if generator == "native" else "uvloop",
        "load_cpu_s": round(load_cpu, 6),
        "load_cpu_us_per_request": per_request_us(load_cpu),
        "load_cpu_share": round(load_share, 3),
        "load_saturated": load_share > SATURATED,
        "rate": rate,
        "scheduled": scheduled,
        "rate_achieved": round(requests / config["duration"], 1) if rate else None,
        "kept_rate": requests >= KEPT_RATE * scheduled if rate else None,
        "ok": errors == 0 and requests > 0,
    }


def summary_line(record: dict) -> str:
    server = (
        f", server CPU {record['server_cpu_share']:.0%}"
        if record["server_cpu_share"] is not None
        else ""
    )
    verdict = "all bytes verified" if record["ok"] else f"FAILED: {record['errors']} errors"
    paced = ""
    if record["rate"]:
        kept = "kept" if record["kept_rate"] else "NOT KEPT"
        paced = (
            f" at {record['rate']:g}/s offered ({kept}: {record['requests']} of "
            f"{record['scheduled']} scheduled)"
        )
    if record["ok"] is False and record["first_error"]:
        verdict += f" (first: {record['first_error']})"
    return (
        f"echo load {record['transport']}{'+tls' * bool(record.get('tls'))} "
        f"{record['connections']}x{record['size']} B{paced}: "
        f"{record['requests_per_s']:.0f} req/s, {record['mib_per_s']:.2f} MiB/s, "
        f"p50 {record['latency_us_p50']} µs p99 {record['latency_us_p99']} µs "
        f"p99.9 {record['latency_us_p999']} µs{server}, "
        f"{record['generator']} generator CPU {record['load_cpu_share']:.0%}"
        f"{' (SATURATED)' if record['load_saturated'] else ''}; {verdict}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.echo.load",
        description="Load an echo server with N connections, verifying every byte.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port_number, required=True)
    parser.add_argument("--connections", type=positive(int), required=True)
    parser.add_argument("--size", type=positive(int), required=True, help="bytes per message")
    parser.add_argument("--duration", type=positive(float), required=True, help="seconds")
    parser.add_argument(
        "--rate",
        type=positive(float),
        help="open loop: offered requests/s over all connections (default: closed loop)",
    )
    parser.add_argument(
        "--generator",
        choices=GENERATORS,
        default="auto",
        help="native (C, built on first use), python (uvloop), or auto: native where it "
        "builds (default)",
    )
    parser.add_argument("--udp", action="store_true", help="one datagram per request")
    parser.add_argument(
        "--tls",
        action="store_true",
        help="TLS on every connection; the server's certificate is NOT verified (the echo "
        "server makes a self-signed one at start); handshakes happen before the measured window",
    )
    parser.add_argument(
        "--processes", type=positive(int), default=1, help="generator processes (default 1)"
    )
    parser.add_argument(
        "--timeout", type=positive(float), default=10.0, help="seconds for an echo (default 10)"
    )
    parser.add_argument("--seed", type=int, default=1, help="payload seed (default 1)")
    parser.add_argument(
        "--warmup",
        type=float,
        default=0.0,
        metavar="S",
        help="first S seconds of the same load on connections of their own, closed before the "
        "measured ones open; not in the record, unless it failed (default 0: none)",
    )
    parser.add_argument("--json", metavar="FILE", help="write the result record ('-': stdout)")
    parser.add_argument("--server-pid", type=int, help="report this process's CPU seconds")
    args = parser.parse_args(argv)
    if args.udp and args.tls:
        parser.error("--tls is TCP only (no DTLS): drop --udp")
    if args.udp and args.size > UDP_MAX:
        parser.error(f"--size {args.size} does not fit in a UDP datagram (at most {UDP_MAX})")
    if args.server_pid is not None:
        import psutil

        if not psutil.pid_exists(args.server_pid):
            parser.error(f"--server-pid {args.server_pid}: no such process")

    # Room for every connection (and children's: the native generator inherits the limit).
    limit = raise_open_file_limit(args.connections + 64)
    if limit < args.connections + 16:
        parser.error(
            f"--connections {args.connections} needs more open files than this process may "
            f"have (hard limit {limit}); an administrator can raise it (`ulimit -Hn`)"
        )
    config = {
        "host": args.host,
        "port": args.port,
        "connections": args.connections,
        "size": args.size,
        "duration": args.duration,
        "udp": args.udp,
        "processes": args.processes,
        "timeout": args.timeout,
        "seed": args.seed,
        "server_pid": args.server_pid,
        "rate": args.rate,
        "generator": args.generator,
        "tls": args.tls,
    }
    if args.generator == "native" and args.udp:
        parser.error("--generator native speaks TCP only; use --generator python for --udp")
    if args.warmup < 0:
        parser.error(f"--warmup {args.warmup:g}: seconds, 0 or more")
    try:
        record = warm_then_load(config, args.warmup)
    except GeneratorUnavailable as error:
        parser.error(str(error))
    return finish(record, args.json, summary_line(record))


def warm_then_load(config: dict, warmup: float) -> dict:
    """The measured load's record, after `warmup` seconds of the same load in this process
    (one interpreter's start instead of two); a warm-up that failed is the record instead."""
    if warmup > 0:
        warm = run_load({**config, "duration": warmup, "server_pid": None})
        if not warm["ok"]:
            return {**warm, "first_error": f"warm-up: {warm['first_error'] or 'no requests'}"}
    return run_load(config)


if __name__ == "__main__":
    sys.exit(main())
