"""Latency as the load rises: each echo row's p50, p99 and p99.9 up a ladder of offered rates.

A capacity planner asks where a server's tail turns up, not how it does at one rate. At echo's
headline point (1 KiB × 100 connections) every echo row is offered a geometric ladder of rates
by the fixed-load generator (open loop, latency from each request's scheduled send, so no
coordinated omission), one step a point, the rows interleaved within a step. A row climbs
until a step ends its climb: it fell behind the rate (the generator's own rule, which echo's
running side records), or the generator saturated its core; it is not measured higher, so a
slow row costs few steps. Its knee is the last step it kept. The rows run on echo's servers
and generator (``runs_on``); the section is ``bench.studies.latency.render``'s.
"""

from __future__ import annotations

from bench.headline import (
    HEADLINE_AT,
    HEADLINE_POINT,
    PACED,
    point_title,
    server_rows,
    servers_unavailable,
)
from bench.plan import USER_BASE, YARDSTICK, Metric, Point
from bench.study import Study
from bench.summary import counted, summarize

NAME = "latency"
TITLE = "Latency as the load rises"
AT = HEADLINE_POINT  # 1 KiB × 100 connections
# The ladder, requests/s: START × FACTOR**k for k < STEPS, a step every 40% from 2,000 up to
# 222,240, past the closed-loop throughput of every echo row at this point (the glance's
# requests/s column): a row's climb ends where it falls behind, or where the generator
# saturates its core first (a ceiling of the instrument, which the knee table says). The first
# quick ladder stopped at 41,322, which almost every row kept up with, so it found no knee.
START, FACTOR, STEPS = 2000, 1.4, 15
RATES = tuple(round(START * FACTOR**k) for k in range(STEPS))
# Seconds per step: (warm-up, measured). Quick: the whole ladder for every echo row, in the time
# this folder's README gives ("What it costs"); 0.8 s holds 1,600 latencies at the lowest step,
# 16 of them past its p99. Full: longer steps, three rounds each.
TIMING = {False: (0.1, 0.8), True: (0.5, 3.0)}
REPETITIONS = {False: 1, True: 3}

METRICS = (
    Metric("latency_p99_ms", "p99 (ms)", higher_is_better=False, digits=3),
    Metric("latency_p50_ms", "p50 (ms)", higher_is_better=False, digits=3),
    Metric("latency_p999_ms", "p99.9 (ms)", higher_is_better=False, digits=3),
    Metric("rate_achieved", "achieved (req/s)", higher_is_better=True, ratio=False),
    Metric("server_cpu_us", "server CPU (µs / request)", higher_is_better=False, digits=1),
    Metric(
        "server_cpu_share", "server CPU (% of a core)", higher_is_better=False, scale=100, digits=1
    ),
    Metric(
        "peer_cpu_share",
        "generator CPU (% of a core)",
        higher_is_better=False,
        scale=100,
        ratio=False,
    ),
)
HEADLINE = "latency_p99_ms"

# What a step is for a row (step_state): it kept the rate; it fell behind (the knee is below);
# the generator saturated (the server may go higher: the instrument cannot say); the server
# stalled (waited for a CPU, measured again and still so: says nothing of the server); it
# failed; or it was not measured, its climb having ended lower.
KEPT, BROKE, CEILING, STALLED, FAILED, PAST = (
    "kept", "broke", "ceiling", "stalled", "failed", "past",
)  # fmt: skip
# The states that end a row's climb, and why in words.
ENDS = {
    BROKE: "it fell behind the offered rate",
    CEILING: "the load generator saturated its core",
    FAILED: "it failed",
}


def step_state(reps: list[dict]) -> str:
    """What one step was for a row, from its stored repetitions, by the bench's own rules:
    valid (bench.summary), invalid because the server could not keep the rate (the
    generator's rule, recorded by bench.studies.echo.measure) or because the generator saturated."""
    kept = counted(reps)
    if any(rep.get("stopped_at") for rep in kept):
        return PAST
    summary = summarize(reps, METRICS)
    if summary.status == "ok":
        return KEPT
    if summary.status != "invalid":
        return FAILED
    if summary.at_least:  # most repetitions' generator saturated: no word on the server
        return CEILING
    if all(rep.get("stalled") for rep in kept if rep.get("invalid")):
        return STALLED
    return BROKE


def climb_ends(reps: list[dict]) -> str | None:
    """Why this stored step ends a row's climb (None: the row goes on to the next step)."""
    return ENDS.get(step_state(reps))


DESCRIPTION = f"""\
Where each echo row's tail latency turns up as the offered load rises, at
{HEADLINE_AT}: the fixed-load generator (open loop, latency counted from each request's
scheduled send, so a server that falls behind is charged for it) offers a ladder of rates,
{RATES[0]:,} requests/s × {FACTOR:g} per step up to {RATES[-1]:,}, every row once per step in a
rotating order (the full run: {REPETITIONS[True]} rounds). A row stops climbing at the first
step it could not keep (fewer than 95% of the scheduled requests completed: the generator's
rule, as in the fixed-load tables) or where the generator saturated its core (the instrument's
ceiling, not the server's); its **knee** is the last step it kept. Quick run: each step
{TIMING[False][1]:g} s after {TIMING[False][0]:g} s of warm-up; full run: {TIMING[True][1]:g} s
after {TIMING[True][0]:g} s.
""".replace("\n", " ")


def points(full: bool) -> list[Point]:
    """One point per step of the ladder, lowest first: the runner measures them in order."""
    every_row = tuple(server_rows())
    warmup, duration = TIMING[full]
    return [
        Point(
            NAME,
            (
                ("measure", PACED),
                *AT.items(),
                ("rate", rate),
                ("warmup_s", warmup),
                ("duration_s", duration),
            ),
            every_row,
            REPETITIONS[full],
        )
        for rate in RATES
    ]


STUDY = Study(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    metrics=METRICS,
    headline=HEADLINE,
    points=points,
    point_title=point_title,
    running="bench.studies.latency.measure",
    unavailable=servers_unavailable,
    bases=(f"{USER_BASE}/native", f"{YARDSTICK}/native"),
    runs_on=("echo", "bench.studies.echo.measure"),
    climbs="rate",
    climb_ends=climb_ends,
    rendering="bench.studies.latency.render",
)
