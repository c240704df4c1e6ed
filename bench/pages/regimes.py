"""What the first screen's regimes measure, read from the cost anatomy of the same machine:
Linux's share of a server's CPU per request (system time over all) and how often the server
blocks (voluntary switches per request), in the closed loop and at the fixed load (at the
loaded rate, the share of its core a server used and how often it blocked, from that point's
own repetitions, where the anatomy does not go); and how
much of the fixed load's CPU the servers' own work explains, as a least-squares line of server
CPU on instructions per request over the readiness rows, with its R². A ratio taken where
Linux's work and the wake-ups make most of the cost says little about a loop's design, and
the first screen says so beside its table."""

from __future__ import annotations

import statistics
from pathlib import Path

import loops
from bench.store import load_file
from bench.studies.anatomy import FILES
from bench.studies.anatomy.render import cpu_us
from bench.studies.instructions import FILE as INSTRUCTIONS
from bench.summary import valid_values
from machine.environment import same_machine

NEVER = 0.005  # voluntary switches per request under which "blocks 0.00 times" is "never"


def kernel_share(entry: dict) -> float | None:
    """Linux's share of one anatomy row's server CPU (None where the split is not stored)."""
    user, system = entry.get("user_us"), entry.get("system_us")
    if user is None or system is None or user + system <= 0:
        return None
    return system / (user + system)


def readiness(key: str) -> bool:
    """A row whose loop waits for readiness: every anchor (epoll, select) and each variant
    its declaration says so of (not io_uring's completions, not threads' blocking calls)."""
    variant, style = key.split("/")
    found = loops.discover().get(variant)
    return style == "native" or (found is not None and found.io_model == "readiness")


def fit(anatomy: dict, counted: dict) -> tuple[float, float, float, float] | None:
    """(intercept µs, slope µs per instruction, R², the median row's instructions) of
    fixed-load server CPU on instructions per request at the counted fixed rate, over the
    readiness rows both hold (None under three rows or with no spread)."""
    pairs = [
        (counted[key]["paced"]["per_request"], cpu_us(entry))
        for key, entry in anatomy["rows"].items()
        if readiness(key)
        and "user_us" in entry
        and "per_request" in counted.get(key, {}).get("paced", {})
    ]
    if len(pairs) < 3:
        return None
    xs, ys = zip(*pairs, strict=True)
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread_x = sum((x - mean_x) ** 2 for x in xs)
    spread_y = sum((y - mean_y) ** 2 for y in ys)
    if spread_x == 0 or spread_y == 0:
        return None
    slope = sum((x - mean_x) * (y - mean_y) for x, y in pairs) / spread_x
    intercept = mean_y - slope * mean_x
    residual = sum((y - intercept - slope * x) ** 2 for x, y in pairs)
    return intercept, slope, 1 - residual / spread_y, statistics.median(xs)


def _span(values: list[float], text: str) -> str:
    low, high = text.format(min(values)), text.format(max(values))
    return low if low == high else f"{low}–{high}"


def _regime(anatomy: dict, servers: list[str]) -> str | None:
    rows = [anatomy["rows"][key] for key in servers if key in anatomy.get("rows", {})]
    shares = [share for row in rows if (share := kernel_share(row)) is not None]
    blocks = [row["switches"]["voluntary"] for row in rows if row.get("switches")]
    if not shares or not blocks:
        return None
    blocking = (
        "never blocks (a request is always waiting)"
        if max(blocks) < NEVER
        else f"blocks {_span(blocks, '{:.2f}')} times per request, a wake-up each"
    )
    return (
        f"Linux holds {_span([100 * s for s in shares], '{:.0f}')}% of a server's CPU per "
        f"request, and a server {blocking}"
    )


def loaded_regime(point: dict | None, servers: list[str]) -> str | None:
    """At the loaded rate, from its own repetitions: the share of its core each server used and
    how often it blocked per request, each row's median (None where the point is not stored or
    its repetitions hold neither figure)."""
    shares, blocks = [], []
    for key in servers:
        reps = (point or {}).get("rows", {}).get(key, {}).get("reps", [])
        for found, metric in ((shares, "server_cpu_share"), (blocks, "server_blocks_per_request")):
            # the repetitions the row's own table takes its figure from
            if values := valid_values(reps, metric):
                found.append(statistics.median(values))
    if not shares or not blocks:
        return None
    return (
        f"a server keeping the rate uses {_span([100 * s for s in shares], '{:.0f}')}% of a core "
        f"and blocks {_span(blocks, '{:.2f}')} times per request (its own repetitions)"
    )


def line(
    results: Path, servers: list[str], machine: dict | None, link: str = "", loaded: str = ""
) -> str | None:
    """The first screen's item on what each regime measures, for these servers (None where the
    anatomy is not stored, or was measured on another machine than `machine`); `loaded`, the
    loaded rate's clause (:func:`loaded_regime`) where its point is stored."""
    fixed, closed = (load_file(results, FILES[regime]) for regime in (False, True))
    if machine is None or any(
        anatomy is None or not same_machine(anatomy.get("environment", {}), machine)
        for anatomy in (fixed, closed)
    ):
        return None
    capacity, idle = _regime(closed, servers), _regime(fixed, servers)
    if capacity is None or idle is None:
        return None
    said = (
        f"**What each regime measures** ([cost anatomy]({link}#cost-anatomy), this machine, "
        f"the table's servers): *capacity*: {capacity}; *idle cost*: {idle}"
        + (f"; *loaded cost*: {loaded}" if loaded else "")
    )
    counted = load_file(results, INSTRUCTIONS)
    found = fit(fixed, counted.get("rows", {})) if counted else None
    if found is None:
        return said + "."
    intercept, slope, r2, middle = found
    rate = counted["rates"]["paced"]
    return (
        f"{said}. Over the readiness rows, idle cost ≈ {intercept:.1f} µs + "
        f"{slope * 1e3:.3f} ns × the server's instructions per request (counted at {rate}/s), "
        f"R² {r2:.2f}: the constant, which no loop's own code sets, is "
        f"{intercept / (intercept + slope * middle):.0%} of the median row's fitted cost."
    )
