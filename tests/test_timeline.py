"""The timelines' tracer: it records the schedule a loop really ran, and changes nothing.

- On a program whose schedule is known (three tasks yielding in turn), the recorded order of
  slices is the FIFO one, on asyncio and on home-made loops, in every style they speak.
- The driver forwards send, throw, close, return values and exceptions exactly as an unwrapped
  coroutine or generator would see them.
- A representative part of the conformance suite passes with every task and callback traced,
  on every discovered variant and style (the whole suite: ``pytest conformance --trace-tasks``).
- A traced run leaves nothing behind: the variant's entries are the same objects with the same
  attributes, and an untraced run's tasks and callbacks run with no tracer frame under them.
- The CLI writes a record and a chart; the report is rendered from records alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import loops
from conformance.harness import all_properties, check_property
from loops._template import scaffold
from timeline import observe, readings, render
from timeline.scenarios import SPINS, play
from timeline.tracer import Tracer, traced

FIFO_TURNS = ["a", "b", "c"] * (SPINS + 1)  # four yields and a return each


@pytest.mark.parametrize(
    ("loop", "style", "expected"),
    [
        ("asyncio", "coroutines", ["spin_coroutines", *FIFO_TURNS, "spin_coroutines"]),
        ("asyncio", "callbacks", ["main", *FIFO_TURNS]),
        ("futures", "generators", ["spin_generators", *FIFO_TURNS, "spin_generators"]),
        ("roundrobin", "coroutines", ["spin_coroutines", *FIFO_TURNS, "spin_coroutines"]),
        ("callbacks", "callbacks", ["main", *FIFO_TURNS]),
    ],
)
def test_a_known_schedule_is_recorded_in_order(loop, style, expected):
    result = observe.run(loop, style, "spin")
    assert readings.order(result) == expected
    if style != "callbacks":
        # Each spinner suspends in sleep(0) four times, then returns.
        names = {row["id"]: row["name"] for row in result["rows"]}
        a_marks = [(s["call"], s["mark"]) for s in result["slices"] if names[s["row"]] == "a"]
        assert [call for call, _ in a_marks] == ["sleep(0)"] * SPINS + [""]
        assert a_marks[-1][1] == "returned"


def _script(log):
    """A generator that logs what it is sent and thrown, and how it ends."""
    try:
        got = yield "first"
        log.append(("sent", got))
        try:
            yield "second"
        except ValueError as error:
            log.append(("thrown", error.args))
        got = yield "third"
        log.append(("sent", got))
        yield "fourth"
        return "result"
    finally:
        log.append("finally")


@types.coroutine
def _await_script(log):
    return (yield from _script(log))


async def _coroutine_script(log):
    return await _await_script(log)


def _drive(target, steps):
    """Apply steps to target; what each step yielded, returned or raised."""
    seen = []
    for step, argument in steps:
        try:
            if step == "send":
                seen.append(("yielded", target.send(argument)))
            elif step == "throw":
                seen.append(("yielded", target.throw(argument)))
            else:
                seen.append(("closed", target.close()))
        except StopIteration as stop:
            seen.append(("returned", stop.value))
        except BaseException as error:
            seen.append(("raised", type(error).__name__, error.args))
    return seen


STEPS = {
    "to the end": [
        ("send", None),
        ("send", 1),
        ("throw", ValueError("v")),
        ("send", 2),
        ("send", 3),
    ],
    "closed midway": [("send", None), ("send", 1), ("close", None), ("send", 2)],
    "error escapes": [("send", None), ("throw", KeyError("k")), ("send", None)],
}


@pytest.mark.parametrize("steps", STEPS.values(), ids=STEPS.keys())
@pytest.mark.parametrize("style", ["generators", "coroutines"])
def test_the_driver_forwards_everything_exactly(style, steps):
    make = _script if style == "generators" else _coroutine_script
    plain_log, traced_log = [], []
    plain = _drive(make(plain_log), steps)
    tracer = Tracer()
    wrapped = tracer.task(make(traced_log), style)
    assert wrapped.__name__ == make.__name__
    assert _drive(wrapped, steps) == plain
    assert traced_log == plain_log
    assert tracer.slices, "the driver recorded nothing"


def test_only_fresh_coroutines_are_wrapped():
    tracer = Tracer()
    not_called = _coroutine_script
    assert tracer.task(not_called, "coroutines") is not_called  # the loop's TypeError stays
    started = _script([])
    next(started)
    assert tracer.task(started, "generators") is started
    generator = _script([])
    assert tracer.task(generator, "coroutines") is generator  # not this style's object


# A representative part of the suite: results, errors with tracebacks, cancellation at the
# suspension point, timeouts, threads, sockets, timers, callbacks' exceptions and fairness.
TRACED_PROPERTIES = [
    "tasks.join_returns_the_result",
    "tasks.join_reraises_the_childs_exception_with_its_traceback",
    "tasks.cancel_delivers_cancelled_error_at_the_suspension_point",
    "tasks.a_task_that_catches_its_cancellation_and_returns_is_not_cancelled",
    "tasks.timeout_after_raises_timeout_error_and_cancels_the_inner_work",
    "tasks.queue_join_returns_when_every_item_is_done",
    "io.echo_over_a_socketpair",
    "io.a_cancelled_recv_lets_a_later_reader_get_the_data",
    "threads.run_in_thread_reraises_the_workers_exception",
    "timers.cancelled_timers_never_fire",
    "exceptions.an_exception_in_a_callback_reaches_the_handler_and_the_loop_goes_on",
    "exceptions.the_main_tasks_exception_comes_out_of_run_unchanged",
    "scheduling.tasks_that_yield_take_turns",
]


def _cases():
    properties = all_properties()
    for variant in loops.discover().values():
        for pid in TRACED_PROPERTIES:
            test = properties[pid]
            spec = test.lab_property
            for style in variant.styles:
                excused = any(d.property == pid and style in d.styles for d in variant.deviations)
                if style in spec.scenarios and spec.needs in variant.capabilities and not excused:
                    yield pytest.param(variant.name, style, pid, id=f"{pid}-{variant.name}-{style}")


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("loop", "style", "pid"), list(_cases()))
def test_conformance_passes_with_every_task_traced(loop, style, pid):
    tracer = Tracer()
    check_property(all_properties()[pid], traced(loops.get(loop), tracer), style)
    assert tracer.slices, "nothing was traced: the property ran outside the tracer"


def _tracer_frames():
    """Names of tracer functions on the current stack (under a task or callback)."""
    frame, found = sys._getframe(1), []
    while frame is not None:
        if frame.f_code.co_filename.endswith("timeline/tracer.py"):
            found.append(frame.f_code.co_name)
        frame = frame.f_back
    return found


def _probe(api, style):
    """Frames of the tracer seen from inside a spawned task (or a callback)."""
    if style == "callbacks":
        loop, seen = api(), []

        def callback():
            seen.extend(_tracer_frames())
            loop.stop()

        try:
            loop.call_soon(callback)
            loop.run_forever()
        finally:
            loop.close()
        return seen
    if style == "generators":

        def child_g():
            yield from api.sleep(0)
            return _tracer_frames()

        def main_g():
            return (yield from api.join((yield from api.spawn(child_g()))))

        return api.run(main_g())
    if style == "blocking":

        def child_b():
            api.sleep(0)
            return _tracer_frames()

        def main_b():
            return api.join(api.spawn(child_b))

        return api.run(main_b)

    async def child():
        await api.sleep(0)
        return _tracer_frames()

    async def main():
        return await api.join(await api.spawn(child()))

    return api.run(main())


def _attributes(entry):
    """What a tracer could have patched: the names and callables of a namespace, or the class
    (and its attributes) of the loops a callbacks factory makes. Plain data is the loop's own
    state (the traps loop counts socket calls in its module) and may change."""
    if callable(entry) and not isinstance(entry, types.ModuleType):
        loop = entry()
        try:
            cls = type(loop)
            return cls, dict(vars(cls)), {k for k, v in vars(loop).items() if callable(v)}
        finally:
            loop.close()
    return {k: v for k, v in vars(entry).items() if callable(v)}, set(vars(entry))


@pytest.mark.parametrize(
    ("loop", "style"),
    [(v.name, s) for v in loops.discover().values() for s in v.styles],
)
def test_a_traced_run_leaves_no_trace(loop, style):
    variant = loops.get(loop)
    entry = variant.api(style)
    before = _attributes(entry)
    assert _probe(traced(variant, Tracer()).api(style), style), "the probe sees no tracer"
    play(traced(variant, Tracer()).api(style), style, "workers")
    assert loops.get(loop) is variant and variant.api(style) is entry
    assert _attributes(entry) == before
    assert _probe(entry, style) == []


def test_the_cli_writes_a_record_and_a_chart_and_the_report_renders(tmp_path):
    data, png = tmp_path / "spin.json", tmp_path / "spin.png"
    command = [
        sys.executable,
        "-m",
        "timeline",
        "--loop",
        "traps",
        "--style",
        "coroutines",
        "--scenario",
        "spin",
        "--json",
        str(data),
        "--out",
        str(png),
    ]
    subprocess.run(command, check=True, timeout=60)
    saved = json.loads(data.read_text())
    assert (saved["loop"], saved["style"], saved["scenario"]) == ("traps", "coroutines", "spin")
    assert png.read_bytes().startswith(b"\x89PNG")
    out = tmp_path / "timelines.md"
    render.report([saved], charts=tmp_path / "charts", out=out)
    text = out.read_text()
    assert "## spin, coroutines" in text and "| `traps` |" in text
    for back in ("](bench.md)", "](conformance.md)", "](../README.md)"):  # the reports link
        assert back in text, back
    for link in ("charts/spin-coroutines-order.png", "charts/spin-traps-coroutines.png"):
        assert link in text and (tmp_path / link).exists()


def test_the_cli_refuses_an_unknown_loop_and_a_style_it_does_not_speak():
    for args, words in [
        (["--loop", "nosuch", "--style", "coroutines", "--scenario", "spin"], "known loops"),
        (["--loop", "traps", "--style", "callbacks", "--scenario", "spin"], "does not speak"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "timeline", *args], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2 and words in done.stderr, done.stderr


@pytest.mark.timeout(120)
def test_a_scaffolded_variant_is_traced_with_no_change_anywhere(tmp_path):
    # Discovery alone: the scaffold's unwritten run() fails, and the report says so by name.
    scaffold("demo", "coroutines", into=tmp_path / "extra")
    store, out = tmp_path / "store", tmp_path / "timelines.md"
    env = {**os.environ, "LAB_EXTRA_LOOPS": str(tmp_path / "extra"), "PYTHONDONTWRITEBYTECODE": "1"}
    for args in (["--all", "--loop", "demo"], ["--all", "--loop", "traps", "--scenario", "spin"]):
        subprocess.run(
            [sys.executable, "-m", "timeline", *args, "--store", str(store)],
            check=True,
            env=env,
            timeout=110,
            capture_output=True,
        )
    failures = json.loads((store / "failures.json").read_text())
    assert sorted(failures) == ["spin-demo-coroutines", "workers-demo-coroutines"]
    assert all("NotImplementedError" in reason for reason in failures.values()), failures
    assert (store / "spin-traps-coroutines.json").exists()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "timeline",
            "--report",
            "--store",
            str(store),
            "--markdown",
            str(out),
        ],
        check=True,
        env=env,
        timeout=110,
    )
    text = out.read_text()
    assert "`spin-demo-coroutines`: exit 1" in text and "| `traps` |" in text


def test_the_report_says_why_schedules_differ_and_never_compares_one_loop_with_itself():
    stored = Path(__file__).resolve().parent.parent / "reports" / "timelines"
    record = json.loads((stored / "spin-futures-generators.json").read_text())
    alone = render._differences([record])
    assert alone.startswith("Only `futures` speaks this style") and "same order" not in alone
    assert render._differences([record, dict(record, loop="twin")]).startswith(
        "All 2 loops ran the slices in the same order"
    )
    kernel = json.loads((stored / "spin-traps-coroutines.json").read_text())
    queue = json.loads((stored / "spin-asyncio-coroutines.json").read_text())
    why = render._differences([queue, kernel])
    assert "`traps` the first task ran 4 slices" in why and "`spawn` ×3" in why
    assert "on `asyncio` it ran 1" in why


STORED = Path(__file__).resolve().parent.parent / "reports" / "timelines"


def test_the_committed_records_include_the_completion_loop():
    names = {path.name for path in STORED.glob("*-completions-*.json")}
    assert names == {"spin-completions-coroutines.json", "workers-completions-coroutines.json"}


def test_a_record_becomes_trace_events_in_microseconds_on_its_rows():
    from timeline.traceevents import trace_events

    record = json.loads((STORED / "spin-futures-generators.json").read_text())
    document = trace_events(record)
    complete = [e for e in document["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(record["slices"])
    first = record["slices"][0]
    assert complete[0]["ts"] == pytest.approx(first["start"] * 1e6, abs=1e-3)
    assert complete[0]["dur"] == pytest.approx((first["end"] - first["start"]) * 1e6, abs=1e-3)
    events = document["traceEvents"]
    named = {e["tid"] for e in events if e["name"] == "thread_name"}
    assert {e["tid"] for e in complete} <= named
    json.dumps(document)  # plain JSON, as Perfetto and chrome://tracing load it


def test_the_time_axis_reads_in_the_unit_of_the_events():
    def record(span):
        return {"slices": [{"start": 0.0, "end": 1e-6}, {"start": span - 1e-6, "end": span}]}

    assert readings.time_unit(record(0.0002)) == ("µs", 1e6)
    assert readings.time_unit(record(0.05)) == ("ms", 1e3)


def test_a_table_of_rows_from_different_interpreters_says_so():
    one = json.loads((STORED / "spin-asyncio-coroutines.json").read_text())
    other = dict(one, loop="twin", python="3.13.0")
    assert render._interpreters([one]) == []
    (sentence, _) = render._interpreters([one, dict(one, python=one["python"]), other])
    assert sentence.startswith("These rows come from different interpreters")
    assert "`twin` on Python 3.13.0" in sentence
