"""A workload made for the test: one short sleep in a fresh process, on two loops.

Everything the bench needs is declared here, as in a module of ``bench/registry``, with its
running side beside it (``MEASURING``, which ``STUDY.running`` names, as it names a module
of ``bench/measure``): registering ``STUDY`` is the only other step
(``tests/test_bench.py`` does it for the length of one test).
"""

from __future__ import annotations

from pathlib import Path

from bench.plan import Chart, Metric, Point, Row
from bench.study import Measuring, Study

NAME = "tiny"
ROWS = (Row("asyncio", "coroutines"), Row("traps", "coroutines"))
PROGRAM = (
    "import sys, loops; api = loops.get(sys.argv[1]).coroutines; "
    "api.run(api.sleep(float(sys.argv[2])))"
)
METRICS = (
    Metric("wall_ms", "process wall time (ms)", higher_is_better=False, digits=1),
    Metric("cpu_ms", "process CPU (ms)", higher_is_better=False, digits=1),
)


def points(full: bool) -> list[Point]:
    return [Point(NAME, (("sleep_ms", ms),), ROWS, 1) for ms in (1, 2)]


def point_title(params: dict) -> str:
    return f"One sleep of {params['sleep_ms']} ms"


def measure(point: Point, row: Row, cores, workdir: Path, full: bool) -> dict:
    """One repetition: a fresh process runs the row's loop for one sleep."""
    from bench.procs import Child, python

    seconds = point.args["sleep_ms"] / 1000
    child = Child(
        python("-c", PROGRAM, row.variant, str(seconds)),
        cores.subject,
        stderr_path=workdir / "tiny.err",
    )
    usage = child.wait(timeout=60)
    child.check(usage)
    return {"wall_ms": usage.wall_seconds * 1000, "cpu_ms": usage.cpu_seconds * 1000}


MEASURING = Measuring(measure=measure)
STUDY = Study(
    name=NAME,
    title="Tiny",
    description="One short sleep in a fresh process (a workload made for the bench's tests).",
    metrics=METRICS,
    headline="wall_ms",
    points=points,
    point_title=point_title,
    running=__name__,
    charts=(Chart(name="wall", metric="wall_ms", x="sleep_ms", title="Tiny", x_label="ms slept"),),
    # The tests count its repetitions: a busy machine (CI's neighbours) must not add any.
    timed=lambda params: False,
)
