"""Sleep: what timers cost at scale, how late they fire, and what waiting costs when idle.

One repetition is one fresh process on the subject core: ``python -m workloads.sleep`` on the
loop and style under test, N sleepers each sleeping a seeded random delay up to the maximum
(the same delays on every loop), or the cancel-heavy variant of it, or the idle mode (one long
sleep while idle sockets are watched). The workload measures itself on the loop's clock
and fails the run if a cancelled sleeper woke, a sleeper woke early, or an idle socket was
reported readable; a failed run is a failed row here. There is no peer process.
"""

from __future__ import annotations

from bench.plan import Chart, Glance, Metric, Point, implemented_styles, variant_rows
from bench.study import Study

NAME = "sleep"
TITLE = "Sleep"
# Per run (False: quick, True: full): the longest sleep in seconds (delays are uniform in
# [0, max]), the numbers of sleepers, the idle wait in seconds.
MAX_DELAY = {False: 0.5, True: 1.0}
TASKS = {False: (1_000, 10_000, 100_000), True: (1_000, 10_000, 100_000, 1_000_000)}
IDLE = {False: 0.5, True: 3.0}
IDLE_SOCKETS = {False: (1_000,), True: (100, 1_000, 10_000)}
CANCEL = {"tasks": 10_000, "fraction": 0.9}  # the cancel-heavy run
CANCEL_TASKS = {False: (10_000,), True: (10_000, 100_000)}
# The resident run: memory per sleeping task, N sleepers asleep at once.
RESIDENT_TASKS = {False: (100_000,), True: (100_000, 1_000_000)}
HEADLINE_POINT = {"mode": "sleepers", "tasks": 10_000}  # the point the glance reads
GLANCE = (
    Glance(
        "sleep CPU per sleeper (µs)",
        tuple(HEADLINE_POINT.items()),
        "cpu_per_sleeper_us",
        "µs of CPU per sleeper",
        "sleep, 10 000 sleepers",
        place=30,
    ),
)
# A repetition that uses more than this many seconds of CPU (quick run, full run) is stopped
# and stored as "did not finish" (a quadratic timer queue at a million sleepers looks like
# that). CPU, not wall time, so that a busy shared machine cannot make a loop look as if it did
# not finish; wall time is only a safety net (bench.studies.sleep.measure.WALL_CAP_FACTOR).
# The full run's 600 s is 600 µs per sleeper at a million: over twice the costliest
# per-sleeper CPU at 100 000 in the committed full run (trio's, reports/results/full/sleep.json),
# so the cap stops a cost that grows with N, not a loop that is merely slow. The quick run's
# 30 s is three times the costliest row at 100 000 sleepers but one (trio's, in
# reports/results/quick/sleep.json); the one, a thread per sleeper, spent minutes a repetition
# there, a sixth of the quick run's hour. In the quick run it now reads "did not finish in
# 30 s of CPU" (over 300 µs a sleeper); the full run, under its own cap, measures it whole.
CAP_S = {False: 30.0, True: 600.0}
# Full run: at least 3 repetitions, up to 5 where the spread asks for it; the million-sleeper
# point, where one repetition can take minutes, at least 2 and at most 3.
REPETITIONS = {False: (3, 3), True: (3, 5)}
LONG_REPETITIONS = (2, 3)
LONG_TASKS = 1_000_000

METRICS = (
    Metric("cpu_per_sleeper_us", "CPU per sleeper (µs)", higher_is_better=False, digits=1),
    Metric("wall_over_ideal", "wall / ideal", higher_is_better=False, digits=3),
    Metric("lateness_p50_ms", "lateness p50 (ms)", higher_is_better=False, digits=3),
    Metric("lateness_p99_ms", "lateness p99 (ms)", higher_is_better=False, digits=3),
    Metric("peak_rss_mib", "peak RSS (MiB)", higher_is_better=False, digits=1),
    Metric("idle_cpu_pct", "idle CPU (% of wall)", higher_is_better=False, digits=2),
    Metric("bytes_per_sleeper", "memory per sleeper (bytes)", higher_is_better=False),
)
HEADLINE = "cpu_per_sleeper_us"
CHARTS = (
    Chart(
        name="cpu-per-sleeper",
        metric="cpu_per_sleeper_us",
        x="tasks",
        where=(("mode", "sleepers"),),
        title="Sleep: CPU per sleeper by number of sleepers",
        x_label="sleepers (N)",
    ),
)
DESCRIPTION = f"""\
N sleepers (tasks, or timers in the callbacks style) each sleep a seeded random delay of up
to {MAX_DELAY[False]:g} s ({MAX_DELAY[True]:g} s in the full run), the same delays on every
loop. **CPU per sleeper** is the process's CPU
over the whole run divided by N (creating, sleeping and waking one); **wall / ideal** is the
run's wall time over the longest delay (1.000 would be free); **lateness** is each wake-up's
delay past its deadline on the loop's own clock. The cancel-heavy run cancels
{CANCEL["fraction"]:.0%} of {CANCEL["tasks"]:,} sleepers (and of 100 000 in the full run) right
after they start (none may wake). The resident run puts {RESIDENT_TASKS[False][0]:,} sleepers
(and a million in the full run) to sleep for an hour each and, once all are asleep, reads the
process's resident memory: **memory per sleeper** is its growth over the memory before the
first sleeper, divided by N (a frame or a stack per task, whatever the design keeps; memory
the kernel holds, such as a thread's kernel stack, is not resident memory and not in it). The
idle run waits {IDLE[False]:g} s ({IDLE[True]:g} s in the
full run) on one sleep while 1 000 idle sockets are watched (100, 1 000 and 10 000 in the full
run): a loop that never busy-waits uses next to no CPU. One fresh process per repetition; a run
with an early or cancelled wake-up fails. A repetition that uses more than {CAP_S[False]:g} s
of CPU ({CAP_S[True]:g} s in the full run) is stopped and its row reads "did not finish" (CPU,
so that a busy machine cannot make a loop look as if it did not finish).
""".replace("\n", " ")


def unavailable() -> str | None:
    if not implemented_styles("workloads.sleep"):
        return "workloads/sleep is not in this tree yet"
    return None


def points(full: bool) -> list[Point]:
    rows = tuple(variant_rows(implemented_styles("workloads.sleep")))
    least, most = REPETITIONS[full]
    cap = CAP_S[full]

    def point(params: tuple, tasks: int = 0) -> Point:
        low, high = LONG_REPETITIONS if full and tasks >= LONG_TASKS else (least, most)
        return Point(NAME, params, rows, high, low if full else None, cap)

    found = [
        point((("mode", "sleepers"), ("tasks", n), ("max_delay", MAX_DELAY[full])), n)
        for n in TASKS[full]
    ]
    found += [
        point(
            (
                ("mode", "cancel"),
                ("tasks", n),
                ("max_delay", MAX_DELAY[full]),
                ("cancel", CANCEL["fraction"]),
            ),
            n,
        )
        for n in CANCEL_TASKS[full]
    ]
    found += [point((("mode", "resident"), ("tasks", n)), n) for n in RESIDENT_TASKS[full]]
    found += [
        point((("mode", "idle"), ("idle", IDLE[full]), ("sockets", n))) for n in IDLE_SOCKETS[full]
    ]
    return found


def columns(params: dict) -> list[Metric]:
    by_name = {m.name: m for m in METRICS}
    if params["mode"] == "idle":
        return [by_name["idle_cpu_pct"], by_name["peak_rss_mib"]]
    if params["mode"] == "resident":
        return [by_name["bytes_per_sleeper"], by_name["peak_rss_mib"]]
    return [m for m in METRICS if m.name not in ("idle_cpu_pct", "bytes_per_sleeper")]


def point_title(params: dict) -> str:
    if params["mode"] == "idle":
        return f"Idle: one {params['idle']:g} s sleep, {params.get('sockets', 1000):,} idle sockets"
    if params["mode"] == "resident":
        return f"Resident: {params['tasks']:,} sleepers asleep at once, memory per sleeper"
    if params["mode"] == "cancel":
        return (
            f"Cancel-heavy: {params['tasks']:,} sleepers, "
            f"{params['cancel']:.0%} cancelled before they fire"
        )
    return f"{params['tasks']:,} sleepers, delays up to {params['max_delay']:g} s"


STUDY = Study(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    metrics=METRICS,
    headline=HEADLINE,
    points=points,
    point_title=point_title,
    running="bench.studies.sleep.measure",
    charts=CHARTS,
    glance=GLANCE,
    columns=columns,
    unavailable=unavailable,
    timed=lambda params: params["mode"] != "resident",  # the resident point reads a size
)
