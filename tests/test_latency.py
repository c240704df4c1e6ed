"""Latency as the load rises: the ladder registered, where a climb ends, the knee, the section.

The knee and the section are checked on small stores written here; one smoke runs two steps
of one row with the real server and the real fixed-load generator, a second each, and checks
what is recorded and that the runner climbs no further than the step that ended it. No test
asserts a latency or a rate.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console

from bench import headline, registry, runner
from bench.fingerprint import fingerprint
from bench.pages import report
from bench.plan import Point, Row
from bench.render.page import Page
from bench.store import ResultStore, results_path
from bench.studies import latency
from bench.studies.echo import measure as echo_measure
from bench.studies.latency.render import HEADERS, Curve, Step, curves, knee, table_rows
from machine.interpreters import RUNNING

SESSION = "20250101T000000Z"
ENV = {
    "host": "testhost",
    "platform": "Linux-test",
    "cpu": "Test CPU",
    "usable_cores": [0, 1],
    "python": "3.11.7",
    "python_implementation": "CPython",
    "libraries": {},
    "commit": {"hash": "0123456789abcdef", "subject": "a commit", "dirty": False},
    "load_average": [0.5, 0.4, 0.3],
}


def kept(rate: float, p99: float = 0.3) -> dict:
    return {
        "rate": rate, "rate_achieved": rate, "latency_p50_ms": p99 / 3, "latency_p99_ms": p99,
        "latency_p999_ms": p99 * 2, "server_cpu_us": 40.0, "server_cpu_share": 0.4,
        "peer_cpu_share": 0.4, "generator": "native",
    }  # fmt: skip


def fell_behind(rate: float) -> dict:
    """A step the server could not keep, recorded as echo's running side records it."""
    return kept(rate, 900.0) | {
        "rate_achieved": rate * 0.7,
        "server_cpu_share": 0.99,
        "invalid": "server could not keep the rate (70 of 100 scheduled requests)",
    }


# -- registration -----------------------------------------------------------------------------


def test_the_ladder_is_registered_on_echos_rows_servers_and_rules():
    assert "latency" in registry.names()
    assert registry.names().index("latency") == registry.names().index("echo") + 1
    workload = registry.get("latency")
    assert runner.running_side(workload).measure is echo_measure.measure  # one rule, not two
    for full in (False, True):
        points = workload.points(full)
        rates = [p.args["rate"] for p in points]
        assert rates == sorted(rates) and rates[0] == latency.START
        assert all(
            b / a == pytest.approx(latency.FACTOR, rel=0.01) for a, b in itertools.pairwise(rates)
        )
        for point in points:
            assert {k: point.args[k] for k in headline.HEADLINE_POINT} == headline.HEADLINE_POINT
            assert point.args["measure"] == headline.PACED
            assert set(point.rows) == set(headline.server_rows())
    assert (
        workload.points(True)[0].args["duration_s"] > workload.points(False)[0].args["duration_s"]
    )
    # echo's servers and generator are part of the fingerprint: not latency's own alone
    row = Row("asyncio", "callbacks")
    alone = dataclasses.replace(workload, runs_on=None)
    assert fingerprint(workload, row) != fingerprint(alone, row)


def test_the_bench_cli_measures_the_ladder_alone():
    from bench.__main__ import parser

    args = parser().parse_args(["run", "--quick", "--study", "latency"])
    assert args.study == ["latency"] and args.full is False
    # its name before studies were folders, still read
    assert parser().parse_args(["run", "--workload", "latency"]).study == ["latency"]


def test_a_step_is_read_by_the_benchs_own_rules():
    assert latency.step_state([kept(2000)]) == latency.KEPT
    assert latency.step_state([fell_behind(2000)]) == latency.BROKE
    saturated = kept(40000) | {"peer_cpu_share": 0.97}
    assert latency.step_state([saturated]) == latency.CEILING
    stalled = fell_behind(2000) | {"server_cpu_share": 0.2, "stalled": True}
    assert latency.step_state([stalled]) == latency.STALLED
    assert latency.step_state([{"error": "server exited 1"}]) == latency.FAILED
    assert latency.climb_ends([kept(2000)]) is None
    assert latency.climb_ends([stalled]) is None  # a disturbance, not the server's knee
    assert latency.climb_ends([fell_behind(2000)]) == "it fell behind the offered rate"


# -- the knee ---------------------------------------------------------------------------------

RATES = (2000, 2800, 3920, 5488)


def steps(*states: str) -> tuple[Step, ...]:
    return tuple(
        Step(r, s, *(0.1, 0.3, 0.6) if s == latency.KEPT else ())
        for r, s in zip(RATES, states, strict=False)
    )


def test_a_row_that_keeps_every_step_has_its_knee_at_the_top():
    found = knee(steps(*[latency.KEPT] * 4))
    assert found[0].rate == RATES[-1] and found[1] is None


def test_a_row_that_breaks_at_the_third_step_has_its_knee_at_the_second():
    made = steps(latency.KEPT, latency.KEPT, latency.BROKE, latency.PAST)
    last, ended = knee(made)
    assert (last.rate, ended.rate) == (RATES[1], RATES[2])
    curve = Curve("asyncio/callbacks", "asyncio · callbacks", "reference", made)
    assert table_rows([curve])[0][:2] == ["asyncio · callbacks", f"{RATES[1]:,}"]
    assert table_rows([curve])[0][5] == f"{RATES[2]:,}"


def test_a_row_whose_first_step_fails_has_no_knee():
    last, ended = knee(steps(latency.BROKE, latency.PAST, latency.PAST, latency.PAST))
    assert last is None and ended.rate == RATES[0]
    curve = Curve(
        "handlers/callbacks", "handlers · callbacks", "home-made", knee_less := steps(latency.BROKE)
    )
    assert table_rows([curve])[0][1:5] == ["none", "—", "—", "—"]
    assert knee_less[0].p99 is None


def test_a_stalled_step_neither_keeps_nor_ends_the_climb():
    last, ended = knee(steps(latency.KEPT, latency.STALLED, latency.KEPT, latency.CEILING))
    assert (last.rate, ended.rate, ended.state) == (RATES[2], RATES[3], latency.CEILING)


def test_a_knee_the_generator_capped_is_not_ranked_and_says_what_the_cpu_implies():
    """A row whose climb ended at the generator's ceiling comes after the rows the server
    ended, reads "≥" its knee, and its why is the rate its CPU share at the knee implies."""
    capped_steps = (
        Step(RATES[0], latency.KEPT, 0.1, 0.3, 0.6, cpu_share=0.25),
        Step(RATES[1], latency.KEPT, 0.1, 0.3, 0.6, cpu_share=0.4),
        Step(RATES[2], latency.CEILING),
    )
    capped = Curve("uvloop-protocol/native", "uvloop-protocol (anchor)", "anchor", capped_steps)
    ended = Curve(
        "asyncio/callbacks", "asyncio · callbacks", "reference",
        steps(latency.KEPT, latency.BROKE),
    )  # fmt: skip
    rows = table_rows([capped, ended])
    assert [row[0] for row in rows] == ["asyncio · callbacks", "uvloop-protocol (anchor)"]
    assert rows[1][1] == f"≥ {RATES[1]:,}" and rows[0][1] == f"{RATES[0]:,}"
    assert f"at {RATES[1]:,}/s the server used 40% of its core" in rows[1][-1]
    assert f"about {RATES[1] / 0.4:,.0f}/s at a whole core" in rows[1][-1]


# -- the runner climbs no further than the step that ended it ---------------------------------


def small_ladder(rates, rows, seconds=(0.2, 1.0)) -> list[Point]:
    warmup, duration = seconds
    return [
        Point(
            "latency",
            (
                ("measure", headline.PACED),
                *headline.HEADLINE_POINT.items(),
                ("rate", rate),
                ("warmup_s", warmup),
                ("duration_s", duration),
            ),
            rows,
            1,
        )
        for rate in rates
    ]


def synthetic_store(tmp_path: Path, by_row: dict[Row, list[dict]]) -> ResultStore:
    """A latency store of RATES, a row's records one per step (None: not stored)."""
    workload = registry.get("latency")
    path = results_path(tmp_path, "quick", "latency")
    store = ResultStore.empty(path, "latency", "quick", workload.kept)
    store.add_session(SESSION, ENV, [])
    for point in small_ladder(RATES, tuple(by_row)):
        for row, records in by_row.items():
            record = records[RATES.index(point.args["rate"])]
            if record is not None:
                rep = record | {"session": SESSION, "load_average": 0.5}
                store.put(point, row, SESSION, fingerprint(workload, row), [rep])
    return store


def test_a_row_is_not_measured_past_the_step_that_ended_its_climb(tmp_path):
    broke, steady = Row("asyncio", "callbacks"), Row("uvloop-protocol", "native", anchor=True)
    store = synthetic_store(
        tmp_path,
        {
            broke: [kept(2000), fell_behind(2800), None, None],
            steady: [kept(2000), kept(2800), None, None],
        },
    )
    workload = registry.get("latency")
    third = small_ladder(RATES, (broke, steady))[2]
    job = runner.Job(workload, runner.running_side(workload), store, third, [broke, steady])
    stop = runner.stopped_below(job, broke)
    assert stop["stopped_at"] == ["rate", 2800]
    assert "fell behind" in stop["error"]
    assert latency.step_state([stop]) == latency.PAST
    line = runner.console_line(job, broke, [stop])
    assert "past its climb: not measured: its climb ended at 2,800 rate (it fell behind" in line
    assert runner.stopped_below(job, steady) is None


# -- the section --------------------------------------------------------------------------------


def page(store, out: Path) -> Page:
    """What the page hands each section: here, the latency store alone."""
    return Page("quick", {"latency": store}, out, out.parent / "charts", lambda _: [], None, None)


def test_the_section_draws_both_groups_and_tabulates_each_knee(tmp_path):
    store = synthetic_store(
        tmp_path,
        {
            Row("uvloop-protocol", "native", anchor=True): [kept(r) for r in RATES],
            Row("asyncio", "callbacks"): [kept(2000), kept(2800), fell_behind(3920), {
                "error": "not measured: at 3,920 rate it fell behind the offered rate",
                "stopped_at": ["rate", 3920]}],
            Row("handlers", "callbacks"): [fell_behind(2000), *[{"error": "not measured",
                "stopped_at": ["rate", 2000]}] * 3],
            Row("callbacks", "callbacks"): [kept(r, 0.2) for r in RATES],
        },
    )  # fmt: skip
    out = tmp_path / "reports" / "bench.md"
    workload = registry.get("latency")
    lines = report.section(workload, page(store, out))
    text = "\n".join(lines)
    assert text.startswith(f"## {latency.TITLE}")
    for group in ("production", "home-made"):
        assert (out.parent / "charts" / f"quick-latency-{group}.png").exists()
        assert f"](charts/quick-latency-{group}.png)" in text
    table = [ln for ln in text.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert len(table[0].split("|")) - 2 == len(HEADERS) <= 8  # at most 8 columns
    by_row = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]] for ln in table}
    assert by_row["uvloop-protocol (anchor)"][0] == f"{RATES[-1]:,}"
    assert (
        by_row["asyncio · callbacks"][0] == "2,800" and by_row["asyncio · callbacks"][4] == "3,920"
    )
    assert by_row["handlers · callbacks"][0] == "none"
    assert "*Ran in:* session 20250101T000000Z" in text
    made = curves(workload, store.data["points"], False)  # a ladder of other timings: all shown
    assert {c.label for c in made} == set(by_row)


def test_the_page_indexes_the_section_only_where_a_ladder_is_stored(tmp_path):
    workload = registry.get("latency")
    assert report.section(workload, page(None, tmp_path / "x.md")) == []
    store = synthetic_store(tmp_path, {Row("asyncio", "callbacks"): [kept(r) for r in RATES]})
    link = f"[{latency.TITLE}](#{latency.TITLE.lower().replace(' ', '-')})"
    for stored, shown in ((None, False), (store, True)):
        stores = {name: None for name in registry.names()} | {"latency": stored}
        out = tmp_path / f"{shown}" / "bench.md"
        report.render("quick", stores, out, None, tmp_path / "results")
        text = out.read_text()
        index = next(line for line in text.splitlines() if line.startswith("Sections: "))
        assert (link in index) is shown
        assert (f"## {latency.TITLE}" in text) is shown


def test_the_site_shows_the_same_curves_and_knees(tmp_path):
    import htmlreport.build  # noqa: F401  (the module: the package's face names its function)

    build = sys.modules["htmlreport.build"]
    store = synthetic_store(
        tmp_path / "results",
        {Row("asyncio", "callbacks"): [kept(2000), kept(2800), fell_behind(3920), None]},
    )
    store.save()
    html = build._bench_page("quick")(tmp_path)
    assert 'id="latency"' in html and "2,800" in html and "3,920" in html
    assert 'type="log"' in html or '"type":"log"' in html


# -- one real smoke: one row, two steps, a second each -----------------------------------------


@pytest.mark.timeout(120)
def test_two_real_steps_then_no_third_past_the_end_of_the_climb(tmp_path, monkeypatch):
    row = Row("asyncio", "callbacks")
    # 2,000 requests/s is light; 400,000 is past any server here or past the generator's core:
    # either way the climb ends there, and the third step is not measured.
    ladder = small_ladder((2000, 400_000, 800_000), (row,))
    tiny = dataclasses.replace(registry.get("latency"), points=lambda full: ladder)
    monkeypatch.setattr(registry, "STUDIES", tuple(
        tiny if w.name == "latency" else w for w in registry.STUDIES))  # fmt: skip
    results = tmp_path / "results"
    assert (
        runner.run(["latency"], False, None, False, results, console=Console(file=io.StringIO()))
        == 0
    )
    stored = json.loads(results_path(results, "quick", "latency", RUNNING).read_text())
    by_rate = {p["params"]["rate"]: p["rows"][row.key]["reps"] for p in stored["points"].values()}
    rates = sorted(by_rate)
    states = [latency.step_state(by_rate[rate]) for rate in rates]
    # 400,000/s ends the climb at the latest (a disturbed machine may end it at 2,000/s already)
    ended = next(i for i, state in enumerate(states) if state in latency.ENDS)
    assert ended <= 1, states
    assert states[ended + 1 :] == [latency.PAST] * (len(rates) - ended - 1), states
    assert by_rate[rates[-1]][0]["stopped_at"] == ["rate", rates[ended]]
    for rate in rates[: ended + 1]:  # a measured step records what a curve draws
        record = by_rate[rate][-1]
        assert record["rate"] == rate and record["generator"] in ("native", "python"), record
        for name in ("latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "rate_achieved"):
            assert isinstance(record[name], float), (name, record)
