"""The bench's machinery: rendering from stored data, resume and skip, the validity rules.

Benchmarks are not tests: nothing here asserts a timing. The stored results these tests render
are a small fixture written through the store's own API; the runner is driven with a fake
workload whose measurements are counters, so what is checked is which rows get measured.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from rich.console import Console

import loops
from bench import headline, length, registry, runner
from bench.fingerprint import fingerprint, row_fingerprint
from bench.pages import report
from bench.plan import Metric, Point, Row
from bench.procs import ChildFailed, DidNotFinish
from bench.render import codesize, intervals
from bench.render.rows import rendered_rows
from bench.store import ResultStore, StoreError, results_path
from bench.studies import echo, micro
from bench.studies.echo import render as echo_render
from bench.studies.http import render as http_render
from bench.studies.micro import measure as micro_measure
from bench.studies.micro import render as micro_render
from bench.study import Measuring, Study
from bench.summary import SATURATION, summarize
from machine.interpreters import RUNNING

ROOT = Path(__file__).resolve().parent.parent
ENV = {
    "date": "2025-01-01T00:00:00+00:00",
    "host": "testhost",
    "platform": "Linux-test",
    "cpu": "Test CPU @ 1.00GHz",
    "logical_cores": 2,
    "usable_cores": [0, 1],
    "pinning": "subject on core 0, peer on core 1",
    "memory_bytes": 1 << 30,
    "python": "3.11.7",
    "python_implementation": "CPython",
    "python_build": "3.11.7",
    "libraries": {"uvloop": "0.21.0"},
    "commit": {"hash": "0123456789abcdef", "subject": "a commit", "dirty": False},
    "code": "f" * 16,
    "load_average": [0.5, 0.4, 0.3],
}
SESSION = "20250101T000000Z"

ECHO_ROWS = (
    Row("asyncio", "callbacks"),
    Row("asyncio", "coroutines"),
    Row("callbacks", "callbacks"),
    Row("uvloop", "coroutines"),
    Row("selectors-floor", "native", anchor=True),
)


def echo_rep(rps: float, share: float = 0.5, **newer) -> dict:
    """A closed-loop repetition as stored before the native generator (`newer`: its fields)."""
    return newer | {
        "requests_per_s": rps,
        "mib_per_s": rps / 1024,
        "latency_p50_ms": 1000 / rps,
        "latency_p99_ms": 3000 / rps,
        "server_cpu_per_100k": 5.0,
        "server_rss_mib": 20.0,
        "peer_cpu_share": share,
        "peer": "load generator",
    }


def paced_rep(server_us: float, kept: bool = True, share: float = 0.2) -> dict:
    """A fixed-offered-load repetition as bench.studies.echo.measure stores it (native
    generator)."""
    rep = {
        "server_cpu_us": server_us,
        "server_cpu_share": server_us * 8000 / 1e6,
        "latency_p50_ms": 0.05,
        "latency_p99_ms": 0.2,
        "latency_p999_ms": 0.5,
        "rate": 8000,
        "rate_basis": "declared",
        "scheduled": 16000,
        "rate_achieved": 8000.0 if kept else 5000.0,
        "requests_per_s": 8000.0 if kept else 5000.0,
        "server_rss_mib": 20.0,
        "peer_cpu_share": share,
        "peer_cpu_us": 6.0,
        "peer": "load generator",
        "generator": "native",
    }
    if not kept:
        rep["invalid"] = "server could not keep the rate (10,000 of 16,000 scheduled requests)"
    return rep


def row_lines(text: str, start: str) -> str:
    """Every line of a row (its table's and its detail table's), joined."""
    return "\n".join(ln for ln in text.splitlines() if ln.startswith(start))


def put_all(store: ResultStore, point: Point, reps_by_row: dict[Row, list[dict]]) -> None:
    for row, reps in reps_by_row.items():
        store.put(point, row, SESSION, fingerprint(registry.get(point.workload), row), reps)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A stored quick run of every workload: small, but shaped like the real thing."""
    base = tmp_path / "results"
    stores = {}
    for name in registry.names():
        path = results_path(base, "quick", name)
        stores[name] = ResultStore.empty(path, name, "quick", registry.get(name).kept)
        stores[name].add_session(SESSION, ENV, ["python", "-m", "bench", "run"])

    for point in echo.points(full=False):  # the real quick points, so they are current
        if point.args.get("measure") == "paced":
            put_all(
                stores["echo"],
                point,
                {
                    Row("asyncio", "callbacks"): [paced_rep(us) for us in (20, 21, 22)],
                    Row("asyncio", "coroutines"): [paced_rep(us) for us in (40, 41, 42)],
                    # half asyncio's callbacks row per request: ×0.50
                    Row("callbacks", "callbacks"): [paced_rep(us) for us in (10, 10.5, 11)],
                    Row("trio", "coroutines"): [paced_rep(90, kept=False)] * 3,
                    Row("selectors-floor", "native", anchor=True): [paced_rep(8)] * 3,
                    # the server users write: every echo ratio's base, as asyncio · callbacks
                    Row("asyncio-protocol", "native", anchor=True): [
                        paced_rep(us) for us in (20, 21, 22)
                    ],
                },
            )
            continue
        put_all(
            stores["echo"],
            point,
            {
                Row("asyncio", "callbacks"): [echo_rep(r) for r in (900, 1000, 1100)],
                Row("asyncio", "coroutines"): [echo_rep(r) for r in (400, 500, 600)],
                # twice asyncio's callbacks row, so its ratio is ×2.00
                Row("callbacks", "callbacks"): [echo_rep(r) for r in (1800, 2000, 2200)],
                # its generator saturated: no figure may be printed for it
                Row("uvloop", "coroutines"): [
                    echo_rep(r, 0.97, server_cpu_us=4.0, peer_cpu_us=5.0, generator="native")
                    for r in (5000, 5100, 5200)
                ],
                Row("selectors-floor", "native", anchor=True): [echo_rep(r) for r in (3, 4, 5)],
                # the server users write, every echo ratio's base: as asyncio · callbacks
                Row("asyncio-protocol", "native", anchor=True): [
                    echo_rep(r) for r in (900, 1000, 1100)
                ],
                # one repetition of three saturated its generator: left out, and said so
                Row("uvloop", "callbacks"): [echo_rep(1500), echo_rep(1600), echo_rep(9e3, 0.99)],
            },
        )

    sleep_rows = (Row("asyncio", "coroutines"), Row("callbacks", "callbacks"))
    for tasks in (1000, 10000):
        point = Point("sleep", (("mode", "sleepers"), ("tasks", tasks), ("max_delay", 1.0)), ())
        rep = {
            "cpu_per_sleeper_us": 20.0,
            "wall_over_ideal": 1.01,
            "lateness_p50_ms": 1.0,
            "lateness_p99_ms": 2.0,
            "peak_rss_mib": 30.0,
        }
        put_all(stores["sleep"], point, {row: [rep, rep, rep] for row in sleep_rows})
    idle = Point("sleep", (("mode", "idle"), ("idle", 1.0)), ())
    idle_rep = {"idle_cpu_pct": 0.1, "peak_rss_mib": 20.0}
    put_all(stores["sleep"], idle, {row: [idle_rep] * 3 for row in sleep_rows})

    for concurrency in (1, 10):
        point = Point(
            "crawler", (("pages", 1000), ("delay_ms", 0), ("concurrency", concurrency)), ()
        )
        rep = {
            "pages_per_s": 400.0 * concurrency,
            "cpu_s": 2.0,
            "peak_rss_mib": 40.0,
            "correct": 1,
            "peer_cpu_share": 0.3,
            "peer": "site server",
        }
        broken = {"error": "found 998 pages; the site has 1000 reachable"}
        put_all(
            stores["crawler"],
            point,
            {Row("asyncio", "coroutines"): [rep] * 3, Row("callbacks", "callbacks"): [broken]},
        )

    micro_rows = (Row("asyncio", "callbacks"), Row("callbacks", "callbacks"))
    point = Point("micro", (("harness", "pyperf"), ("processes", 6), ("values", 3)), ())
    put_all(
        stores["micro"],
        point,
        {
            # pyperf repeats inside one bench repetition and reports its own spread
            Row("asyncio", "callbacks"): [
                {
                    "switch": 6000.0,
                    "call_soon": 1000.0,
                    "timer": 3000.0,
                    "stdev_pct": {"switch": 2.5, "call_soon": 1.0, "timer": 12.0},
                }
            ],
            Row("callbacks", "callbacks"): [
                {
                    "switch": 3000.0,
                    "call_soon": 500.0,
                    "failed_figures": {"timer": "did not finish"},
                }
            ]
            * 3,
        },
    )
    assert {r.key for r in micro_rows}
    for store in stores.values():
        store.save()
    return base


def test_report_has_every_section_with_ratios_and_a_line_under_each_table(results, tmp_path):
    reports = tmp_path / "reports"
    written = report.render_all(results, reports)
    text = (reports / "bench.md").read_text()
    for heading in ("Echo", "Sleep", "Crawler", "Micro", "Code size", "Conformance", "Environment"):
        assert f"\n## {heading}\n" in text
    assert "×2.00" in text  # callbacks at twice asyncio's callbacks row
    assert "×0.50" in text  # micro: callbacks switch at half asyncio's
    tables = text.count("|---")
    workloads = text.split("\n## Scale\n")[0]  # the scale section has lines of its own
    lines = workloads.count("*What this shows:*")
    # echo (closed and paced, plain and over TLS at the headline, and the loaded rate), sleep,
    # crawler, micro points
    assert lines == 5 + 2 + 3 + 2 + 1
    assert "\n### TLS's cost per request\n" in text  # the TLS points have their plain twins
    assert tables >= lines
    # under every point's table, and under the glance's, TLS's, the scale's and the twins'
    assert text.count("*Ran in:* session 20250101T000000Z on testhost (Test CPU") >= lines
    assert "](conformance.md)" in text
    assert "Test CPU @ 1.00GHz" in text and "`0123456789`" in text and "CPython 3.11.7" in text
    charts = ("quick-echo-requests.png", "quick-echo-cost.png", "quick-sleep-cpu-per-sleeper.png")
    for chart in charts:
        assert (reports / "charts" / chart).stat().st_size > 0
        assert f"(charts/{chart})" in text
    assert reports / "bench.md" in written
    # every stored row appears
    for label in ("callbacks · callbacks", "asyncio · coroutines", "selectors-floor (anchor)"):
        assert label in text


def test_a_chart_the_report_no_longer_shows_is_removed(results, tmp_path):
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    left_over = reports / "charts" / "quick-echo-dropped.png"
    left_over.write_bytes(b"a chart from results since dropped")
    other_mode = reports / "charts" / "full-echo-requests.png"
    other_mode.write_bytes(b"the full report's: not this render's to judge")
    written = report.render_all(results, reports)
    assert not left_over.exists() and other_mode.exists()
    text = (reports / "bench.md").read_text()
    for chart in (p for p in written if p.suffix == ".png"):
        assert f"(charts/{chart.name})" in text


def test_a_pyperf_row_shows_pyperfs_own_spread_not_a_range_of_one(results, tmp_path):
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    text = (reports / "bench.md").read_text()
    micro_part = text.split("\n## Micro\n")[1].split("\n## ")[0]
    assert "pyperf std dev (% of mean)" in micro_part
    assert "switch 2.5, call_soon 1.0, timer 12.0" in row_lines(micro_part, "| asyncio · cal")
    asyncio_row = next(ln for ln in micro_part.splitlines() if ln.startswith("| asyncio · cal"))
    cells = [cell.strip() for cell in asyncio_row.split("|")[1:-1]]
    assert cells[1] == "6,000"  # the figure alone: one repetition has no min–max


def test_the_two_micro_harnesses_are_compared_pair_by_pair_steady_apart_from_noisy(
    results, tmp_path
):
    def point(params: dict, reps: list[dict]) -> dict:
        entry = {"variant": "asyncio", "style": "callbacks", "reps": reps}
        return {"params": params, "rows": {"asyncio/callbacks": entry}}

    pyperf = point(
        {"harness": "pyperf", "processes": 20, "values": 3},
        [{"switch": 1000.0, "timer": 2000.0, "stdev_pct": {"switch": 2.0, "timer": 12.0}}],
    )
    lab = point(
        {"min_time_s": 0.1, "runs": 7},
        [{"switch": s, "timer": t} for s, t in ((1000, 1000), (1100, 1200), (1300, 1400))],
    )
    lines = micro_render.section_end({"pyperf": pyperf, "lab": lab})
    text = "\n".join(lines)
    assert "| asyncio · callbacks | switch | 1,000 (2.0%) | 1,100 [1,000–1,300] | 1.10 |" in text
    assert "| asyncio · callbacks | timer | 2,000 (12.0%) | 1,200 [1,000–1,400] | 0.60 |" in text
    assert "the 1 steady pairs lab / pyperf runs from 1.10 to 1.10" in text
    assert "the 1 noisier pairs lab / pyperf runs from 0.60 to 0.60" in text
    assert micro_render.section_end({"pyperf": pyperf}) == []  # the quick run: pyperf alone
    report.render_all(results, tmp_path / "reports")
    assert "two harnesses" not in (tmp_path / "reports" / "bench.md").read_text()


def test_what_this_shows_is_written_from_the_figures(results, tmp_path):
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    echo = (reports / "bench.md").read_text().split("## Echo")[1].split("## Sleep")[0]
    line = next(ln for ln in echo.splitlines() if ln.startswith("*What this shows:*"))
    assert "highest callbacks · callbacks (2,000, ×2.00 asyncio-protocol)" in line
    assert "Best home-made loop: callbacks · callbacks" in line
    # the floor is an anchor: 4 req/s, so the home-made loop is at 50000 % of it
    assert "of the bare-selectors floor" in line


def test_a_saturated_load_generator_makes_the_row_invalid_not_a_number(results, tmp_path):
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    text = (reports / "bench.md").read_text().split("\n## Echo\n")[1]  # past the glance table
    row = next(ln for ln in text.splitlines() if ln.startswith("| uvloop · coroutines"))
    assert "**invalid**" in row and "97%" in row
    assert "5,100" not in row  # the median it would have printed
    assert "saturated its core" in text
    # ... and the report gives both costs per request, the server's and the generator's
    assert "uvloop · coroutines (server 4.0 µs per request, load generator 5.0 µs)" in text
    assert "the generator saturated, uvloop · coroutines cost less per request than the" in text
    capped = next(ln for ln in text.splitlines() if ln.startswith("| uvloop · callbacks"))
    assert "1,550 [1,500–1,600]" in capped and "2/3 §" in capped
    assert "§ uvloop · callbacks: some repetitions saturated the peer" in text


def test_fixed_offered_load_tables_show_cost_the_rate_and_who_could_not_keep_it(results, tmp_path):
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    echo = (reports / "bench.md").read_text().split("## Echo")[1].split("## Sleep")[0]
    paced = echo.split("### Fixed offered load: 1 KiB messages, 100 connections, 8,000 req")
    assert len(paced) == 2, "a fixed-offered-load section at 1 KiB x 100 connections"
    section = paced[1].split("\n### ")[0]
    assert "server CPU (µs / request) median [min–max]" in section
    assert (
        "*Offered load:* 8,000 requests/s over 100 connections, declared in "
        "`bench/studies/echo/__init__.py`, the same in every session, quick and full. Every "
        "request is scheduled" in section
    )
    # its line in the table and in the detail table under it (no table wider than 8 columns)
    callbacks = row_lines(section, "| callbacks · callbacks")
    assert "10.5 [10.0–11.0]" in callbacks and "×0.50 [" in callbacks and "native" in callbacks
    trio = next(ln for ln in section.splitlines() if ln.startswith("| trio · coroutines"))
    assert "**invalid**" in trio and "could not keep the rate" in trio
    assert "No figure for trio · coroutines: server could not keep the rate" in section
    # Closed-loop rows stored before the generator was recorded were measured by the Python one.
    closed = echo.split("### Closed loop, maximum throughput: 1 KiB messages, 100 connections")[1]
    closed = closed.split("\n### ")[0]
    detail = closed.split("*Detail:*")[1]
    asyncio_row = next(ln for ln in detail.splitlines() if ln.startswith("| asyncio · callbacks"))
    assert asyncio_row.rstrip(" |").rsplit("|", 1)[1].strip() == "python"
    assert "(charts/quick-echo-cost.png)" in echo


def test_the_offered_rate_is_declared_the_same_in_quick_and_full_runs():
    quick = {
        p.key: p.args
        for p in echo.points(full=False)
        if p.args.get("measure") == "paced" and not p.args.get("curve")
    }
    full = [p.args for p in echo.points(full=True) if p.args.get("measure") == "paced"]
    assert quick and all(
        args["rate"] == headline.offered_rate(1024, args["connections"]) for args in quick.values()
    )
    at = [
        a for a in full if (a["size"], a["connections"]) == (1024, 100) and not a.get(headline.TLS)
    ]
    # the full run's curve: the declared rate plus the other declared curve rates
    assert sorted(a["rate"] for a in at) == sorted(echo.CURVE_RATES[True])
    # the quick run's loaded rate is a point of the full run's curve too, at the same parameters
    loaded = [p.args for p in echo.points(full=False) if p.args.get("curve")]
    assert [a["rate"] for a in loaded] == [headline.LOADED_RATE]
    assert {k: v for k, v in loaded[0].items() if k not in ("warmup_s", "duration_s")} in [
        {k: v for k, v in a.items() if k not in ("warmup_s", "duration_s")} for a in at
    ]
    for args in quick.values():  # the same rate at the same size and connections in full
        same = [a for a in full if (a["size"], a["connections"]) == (1024, args["connections"])]
        assert args["rate"] in {a["rate"] for a in same if "curve" not in a}


def test_a_row_with_repetitions_at_two_rates_is_two_points(tmp_path):
    """A stored point from before the rate was declared, one row at two rates: two points."""
    store = ResultStore.empty(results_path(tmp_path, "quick", "echo"), "echo", "quick")
    store.add_session(SESSION, ENV, ["python", "-m", "bench", "run"])
    old = Point("echo", (("measure", "paced"), ("size", 1024), ("connections", 100)), ())
    row = Row("callbacks", "callbacks")
    reps = [paced_rep(10) | {"rate": 17000}, paced_rep(30) | {"rate": 8000}]
    store.put(old, row, SESSION, "code", [*reps, paced_rep(31) | {"rate": 8000}])
    store.save()
    points = ResultStore.load(store.path, "echo", "quick").data["points"]
    assert len(points) == 2
    by_rate = {p["params"]["rate"]: p for p in points.values()}
    assert set(by_rate) == {8000, 17000}
    assert all(p["params"]["rate_derived"] for p in points.values())
    assert [r["server_cpu_us"] for r in by_rate[8000]["rows"][row.key]["reps"]] == [30, 31]
    assert [r["server_cpu_us"] for r in by_rate[17000]["rows"][row.key]["reps"]] == [10]
    title = headline.point_title(by_rate[17000]["params"])
    assert "17,000 requests/s" in title and "old point" in title


def test_saturation_rule_uses_valid_repetitions_only():
    metrics = [Metric("requests_per_s", "requests/s", higher_is_better=True)]
    one_bad = summarize([echo_rep(100), echo_rep(200), echo_rep(9999, share=0.99)], metrics)
    assert one_bad.status == "ok"
    assert (one_bad.valid, one_bad.total) == (2, 3)
    assert one_bad.stats["requests_per_s"].high == 200  # the saturated figure is left out
    two_bad = summarize([echo_rep(100), echo_rep(1, 0.95), echo_rep(1, SATURATION)], metrics)
    assert two_bad.status == "invalid"
    assert two_bad.stats == {}
    failed = summarize([echo_rep(100), {"error": "corrupt echo"}], metrics)
    assert failed.status == "failed" and failed.reason == "corrupt echo"


def test_failed_rows_and_failed_figures_say_so(results, tmp_path):
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    text = (reports / "bench.md").read_text()
    crawler = text.split("## Crawler")[1].split("## Micro")[0]
    crawler_row = next(
        ln for ln in crawler.splitlines() if ln.startswith("| callbacks · callbacks")
    )
    assert "**failed**" in crawler_row and "998 pages" in crawler_row
    assert "timer failed: did not finish" in text


def test_a_discovered_variant_without_results_is_shown_as_not_measured(results, tmp_path):
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    echo = (reports / "bench.md").read_text().split("## Echo")[1].split("## Sleep")[0]
    # trio speaks coroutines and echo is written in it, but the fixture stored no trio row
    trio = next(ln for ln in echo.splitlines() if ln.startswith("| trio · coroutines"))
    assert "**not measured**" in trio
    assert "Not measured yet: " in echo


def test_report_runs_nothing_and_is_reproducible(results, tmp_path, monkeypatch):
    def no_processes(*args, **kwargs):
        raise AssertionError(f"the report started a process: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_processes)
    first = report.render_all(results, tmp_path / "a")
    second = report.render_all(results, tmp_path / "b")
    assert (tmp_path / "a" / "bench.md").read_text() == (tmp_path / "b" / "bench.md").read_text()
    assert len(first) == len(second)


def test_report_without_results_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="run `nox -s bench` first"):
        report.render_all(tmp_path / "nothing", tmp_path)


# -- the runner: what gets measured, what is skipped ---------------------------------------


class FakeWorkload:
    """A workload whose 'measurement' counts calls, for checking the runner's choices."""

    NAME = "fake"
    TITLE = "Fake"
    DESCRIPTION = "fake"
    METRICS = (Metric("value", "value", higher_is_better=True),)
    HEADLINE = "value"
    ROWS = (Row("asyncio", "coroutines"), Row("callbacks", "callbacks"), Row("uvloop", "callbacks"))
    RUNNING = "tests_fake_running"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.interrupt_at: str | None = None
        self.interrupt_after: int | None = None  # Ctrl-C at this many measurements
        self.failing: str | None = None  # a row key whose measurement fails
        self.overrunning: str | None = None  # a row key whose measurement overruns its cap
        self.repetitions: tuple[int, int | None] = (2, None)  # (at most, at least)
        self.noisy: str | None = None  # a row key whose figure alternates 10, 20, 10, ...
        self.cap_s = 5.0  # every point's time cap
        self.stalls: dict[str, int] = {}  # row key -> how many of its next measurements stall
        self.key_repetitions: int | None = None  # the key rows' rounds, where they get more

    def points(self, full: bool) -> list[Point]:
        most, least = self.repetitions
        return [
            Point("fake", (("n", n),), self.ROWS, most, least, self.cap_s, self.key_repetitions)
            for n in (1, 2)
        ]

    def measure(self, point, row, cores, workdir, full) -> dict:
        if point.key == self.interrupt_at or (
            self.interrupt_after is not None and len(self.calls) == self.interrupt_after
        ):
            raise KeyboardInterrupt
        self.calls.append((point.key, row.key))
        if row.key == self.failing:
            raise ChildFailed("server exited with status 1")
        if row.key == self.overrunning:
            raise DidNotFinish(point.cap_s, f"fake did not finish within {point.cap_s:g} s")
        if row.key == self.noisy:
            return {"value": 10.0 + 10.0 * (self.calls.count((point.key, row.key)) % 2)}
        if row.key == "uvloop/callbacks" and self.failing == "unreadable":
            return json.loads("{broken")
        if self.stalls.get(row.key):
            self.stalls[row.key] -= 1
            return {"value": 1.0, "invalid": "stalled: busy 40% of its core", "stalled": True}
        return {"value": 10.0 if row.variant == "asyncio" else 20.0}

    def declared(self) -> Study:
        """This fake as the bench sees it: a registered Study."""
        return Study(
            name=self.NAME,
            title=self.TITLE,
            description=self.DESCRIPTION,
            metrics=self.METRICS,
            headline=self.HEADLINE,
            points=self.points,
            point_title=str,
            running=self.RUNNING,
            # Its figures are made up, not timed: a busy machine must not change its calls.
            timed=lambda params: False,
        )

    def running_side(self) -> ModuleType:
        """Its running module, made in memory: MEASURING counts calls on this fake."""
        module = ModuleType(self.RUNNING)
        module.MEASURING = Measuring(measure=self.measure)
        return module


@pytest.fixture
def fake(monkeypatch) -> FakeWorkload:
    workload = FakeWorkload()
    # Registered for this test only, as a workload module registers itself in bench.registry.
    monkeypatch.setattr(registry, "STUDIES", (*registry.STUDIES, workload.declared()))
    monkeypatch.setitem(sys.modules, workload.RUNNING, workload.running_side())
    return workload


def run_fake(tmp_path: Path, **options) -> None:
    options = {"full": False, "loop_names": None, "redo": False, **options}
    runner.run(["fake"], results=tmp_path, console=Console(file=io.StringIO()), **options)


def stored(tmp_path: Path) -> dict:
    return json.loads(results_path(tmp_path, "quick", "fake", RUNNING).read_text())


def test_runner_measures_everything_once_then_skips_what_is_stored(fake, tmp_path):
    run_fake(tmp_path)
    assert len(fake.calls) == 2 * 3 * 2  # points x rows x repetitions
    data = stored(tmp_path)
    assert set(data["points"]) == {"n=1", "n=2"}
    fake.calls.clear()
    run_fake(tmp_path)
    assert fake.calls == []


def test_key_rows_get_their_own_rounds_and_share_the_first_ones_with_the_rest(fake, tmp_path):
    # callbacks (home-made) is a key row; asyncio and uvloop (production loops' adapters) are
    # not.
    fake.key_repetitions = 5
    run_fake(tmp_path)
    counts = {key: sum(1 for c in fake.calls if c == ("n=1", key)) for _, key in fake.calls}
    assert counts == {"asyncio/coroutines": 2, "callbacks/callbacks": 5, "uvloop/callbacks": 2}
    # The rows' first two rounds are interleaved: the others' last calls come before the key
    # row's third round.
    first_point = [key for point, key in fake.calls if point == "n=1"]
    assert first_point[6:] == ["callbacks/callbacks"] * 3
    fake.calls.clear()
    run_fake(tmp_path)  # complete: nothing more to run
    assert fake.calls == []
    fake.key_repetitions = 6  # more key rounds: the home-made row runs one more, and the
    run_fake(tmp_path)  # baseline its two again (it is measured in the session of its rows)
    assert sorted(fake.calls) == sorted(
        [(f"n={n}", "asyncio/coroutines") for n in (1, 2)] * 2
        + [(f"n={n}", "callbacks/callbacks") for n in (1, 2)]
    )


def test_a_run_with_rounds_runs_every_row_that_many_times_whatever_its_points_declare(
    fake, tmp_path
):
    fake.key_repetitions = 5  # a reproduction's session: its own rounds, key rows or not
    run_fake(tmp_path, rounds=3)
    assert sorted(fake.calls) == sorted(
        (f"n={n}", row.key) for n in (1, 2) for row in fake.ROWS for _ in range(3)
    )


def test_a_run_says_its_estimated_length_from_the_last_runs_pace_and_stores_its_own(fake, tmp_path):
    run_fake(tmp_path)
    data = stored(tmp_path)
    session = data["sessions"][max(data["sessions"])]
    assert session["estimated_s"] == 0  # nothing stored to read a pace from
    assert session["took_s"] >= 0
    path = results_path(tmp_path, "quick", "fake", RUNNING)
    for point in data["points"].values():  # a repetition every 3 s, as if measured so
        reps = [rep for row in point["rows"].values() for rep in row["reps"]]
        for i, rep in enumerate(reps):
            rep["started_at"] = f"2026-12-07T00:00:{3 * i:02d}+00:00"
    path.write_text(json.dumps(data))
    assert length.estimate([(path, "n=1", 10), (path, "n=9", 4)]) == (30.0, 4)
    assert length.said(30.0, 4) == "about 30 s, and 4 repetitions never run here before"


def test_runner_remeasures_a_missing_or_changed_row_with_a_fresh_baseline(fake, tmp_path):
    run_fake(tmp_path)
    path = results_path(tmp_path, "quick", "fake", RUNNING)
    data = stored(tmp_path)
    del data["points"]["n=1"]["rows"]["callbacks/callbacks"]
    data["points"]["n=2"]["rows"]["uvloop/callbacks"]["code"] = "changed"
    path.write_text(json.dumps(data))
    fake.calls.clear()
    run_fake(tmp_path)
    assert sorted(set(fake.calls)) == [
        ("n=1", "asyncio/coroutines"),
        ("n=1", "callbacks/callbacks"),
        ("n=2", "asyncio/coroutines"),
        ("n=2", "uvloop/callbacks"),
    ]


def test_a_stalled_repetition_is_kept_with_its_reason_and_measured_again(fake, tmp_path):
    """A repetition its workload found stalled is stored with its reason and measured again,
    at once: the row still gets its repetitions, the stalled one is in no figure, and the
    summary counts it. One that stalls every time is kept, after REDOS more, as measured."""
    fake.stalls = {"callbacks/callbacks": 1, "uvloop/callbacks": runner.REDOS + 1}
    run_fake(tmp_path)
    rows = stored(tmp_path)["points"]["n=1"]["rows"]
    reps = rows["callbacks/callbacks"]["reps"]
    assert [r.get("redone") for r in reps] == ["stalled: busy 40% of its core", None, None]
    summary = summarize(reps, FakeWorkload.METRICS)
    assert (summary.status, summary.total, summary.redone) == ("ok", 2, 1)
    assert summary.stats["value"].median == 20.0
    stalled = rows["uvloop/callbacks"]["reps"]
    assert [bool(r.get("redone")) for r in stalled] == [True] * runner.REDOS + [False, False]
    assert stalled[runner.REDOS].get("stalled")  # the last attempt, kept as measured: invalid
    assert summarize(stalled, FakeWorkload.METRICS).redone == runner.REDOS
    # Every repetition records its window: when it ran, how long, what else the machine did.
    assert all({"started_at", "length_s"} <= rep.keys() for rep in reps)


def test_a_closed_loop_repetition_whose_server_waited_is_a_stall():
    from bench.studies.echo.measure import STALL_BUSY, STALL_CONNECTIONS, closed_stall

    many = {"connections": STALL_CONNECTIONS}
    assert closed_stall({"server_cpu_share": 0.4, "load_cpu_share": 0.3}, many)["stalled"]
    assert closed_stall({"server_cpu_share": STALL_BUSY, "load_cpu_share": 0.3}, many) == {}
    # The generator saturated: client-bound, not a stall (the peer rule says so).
    assert closed_stall({"server_cpu_share": 0.4, "load_cpu_share": 0.95}, many) == {}
    # One connection in lockstep: the server waits for the client by design.
    assert closed_stall({"server_cpu_share": 0.4, "load_cpu_share": 0.3}, {"connections": 1}) == {}


def test_a_window_says_what_else_the_machine_did():
    from machine.activity import TICK, Reading, window

    before = Reading(0.0, 100.0, 1_000_000, 10 * TICK, 0, 1.0)
    after = Reading(2.0, 102.0, 1_500_000, 13 * TICK, TICK // 2, 2.5)
    found = window(before, after)
    assert found["started_at"].startswith("1970-01-01T00:00:00")
    assert found["length_s"] == 2.0
    assert found["cpu_pressure"] == 0.25  # 0.5 s of waiting over 2 s
    assert found["steal_cpus"] == 0.25
    assert found["others_cpus"] == 0.75  # 3 s busy, 1.5 s of them this process's tree
    no_psi = Reading(0.0, 100.0, None, None, None, 0.0)
    assert set(window(no_psi, no_psi)) == {"started_at", "length_s"}


def test_a_failed_row_stops_at_its_first_failure_and_is_kept(fake, tmp_path):
    fake.failing = "callbacks/callbacks"
    run_fake(tmp_path)
    assert fake.calls.count(("n=1", "callbacks/callbacks")) == 1  # not repeated after failing
    entry = stored(tmp_path)["points"]["n=1"]["rows"]["callbacks/callbacks"]
    assert entry["reps"][0]["error"] == "server exited with status 1"
    fake.calls.clear()
    run_fake(tmp_path)
    assert fake.calls == []  # stored as failed until its code changes or --redo


def test_a_measurement_the_bench_cannot_read_fails_its_row_not_the_run(fake, tmp_path):
    fake.failing = "unreadable"
    run_fake(tmp_path)
    rows = stored(tmp_path)["points"]["n=2"]["rows"]
    assert rows["uvloop/callbacks"]["reps"][0]["error"].startswith("JSONDecodeError")
    assert all("error" not in rep for rep in rows["callbacks/callbacks"]["reps"])


def test_runner_narrowed_to_a_loop_keeps_the_baseline(fake, tmp_path):
    run_fake(tmp_path, loop_names=["callbacks"])
    assert {row for _, row in fake.calls} == {"asyncio/coroutines", "callbacks/callbacks"}


def test_runner_redo_measures_again(fake, tmp_path):
    run_fake(tmp_path)
    fake.calls.clear()
    run_fake(tmp_path, redo=True)
    assert len(fake.calls) == 12


def test_an_interrupted_run_resumes_where_it_stopped(fake, tmp_path):
    fake.interrupt_at = "n=2"
    with pytest.raises(KeyboardInterrupt):
        run_fake(tmp_path)
    assert set(stored(tmp_path)["points"]) == {"n=1"}
    fake.interrupt_at = None
    fake.calls.clear()
    run_fake(tmp_path)
    assert {point for point, _ in fake.calls} == {"n=2"}


def test_results_from_another_machine_are_not_reused(fake, tmp_path):
    run_fake(tmp_path)
    path = results_path(tmp_path, "quick", "fake", RUNNING)
    data = stored(tmp_path)
    for session in data["sessions"].values():
        session["environment"]["host"] = "another-machine"
    path.write_text(json.dumps(data))
    fake.calls.clear()
    run_fake(tmp_path)
    assert len(fake.calls) == 12
    assert all(
        s["environment"]["host"] != "another-machine" for s in stored(tmp_path)["sessions"].values()
    )


def test_a_library_upgrade_is_another_machine_but_a_library_no_longer_listed_is_not(fake, tmp_path):
    run_fake(tmp_path)
    path = results_path(tmp_path, "quick", "fake", RUNNING)
    data = stored(tmp_path)
    session = next(iter(data["sessions"].values()))
    session["environment"]["libraries"]["a-library-since-dropped"] = "1.0"
    path.write_text(json.dumps(data))
    fake.calls.clear()
    run_fake(tmp_path)
    assert fake.calls == []
    library = next(iter(session["environment"]["libraries"]))
    session["environment"]["libraries"][library] = "0.0.1"
    path.write_text(json.dumps(data))
    run_fake(tmp_path)
    assert len(fake.calls) == 12


def test_each_ratio_uses_the_baseline_of_its_own_session(fake, tmp_path):
    run_fake(tmp_path)
    path = results_path(tmp_path, "quick", "fake", RUNNING)
    data = stored(tmp_path)
    first_session = data["points"]["n=1"]["rows"]["uvloop/callbacks"]["session"]
    del data["points"]["n=1"]["rows"]["callbacks/callbacks"]
    path.write_text(json.dumps(data))
    run_fake(tmp_path)
    point = stored(tmp_path)["points"]["n=1"]
    assert point["rows"]["uvloop/callbacks"]["session"] == first_session
    assert point["rows"]["asyncio/coroutines"]["session"] != first_session
    rows = {r.row.key: r for r in rendered_rows(fake.declared(), point)}
    assert rows["uvloop/callbacks"].earlier
    assert rows["uvloop/callbacks"].ratio(fake.METRICS[0]) == pytest.approx(2.0)
    assert rows["callbacks/callbacks"].ratio(fake.METRICS[0]) == pytest.approx(2.0)


def test_unreadable_results_are_a_clear_error(tmp_path):
    path = tmp_path / "echo.json"
    path.write_text("{not json")
    with pytest.raises(StoreError, match="not readable results JSON"):
        ResultStore.load(path, "echo", "quick")
    path.write_text(json.dumps({"format": 1, "workload": "sleep"}))
    with pytest.raises(StoreError, match="expected format 1 of 'echo'"):
        ResultStore.load(path, "echo", "quick")


def test_unknown_loop_is_a_usage_error_naming_the_known_ones():
    result = subprocess.run(
        [sys.executable, "-m", "bench", "run", "--loop", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unknown loop nope" in result.stderr and "asyncio" in result.stderr


def test_a_bench_stopped_by_sigterm_stops_every_process_it_started(tmp_path):
    """SIGTERM mid-repetition: the bench unwinds, says how to resume, and leaves no server."""
    import signal
    import time

    import psutil

    command_line = ["run", "--workload", "echo", "--loop", "callbacks", "--results", str(tmp_path)]
    bench = subprocess.Popen(
        [sys.executable, "-m", "bench", *command_line],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    def command(process: psutil.Process) -> str:
        with contextlib.suppress(psutil.Error):
            return " ".join(process.cmdline())
        return ""  # it has already ended

    try:
        deadline = time.monotonic() + 120  # a fresh clone compiles the load generator first
        started: list[psutil.Process] = []
        while not any("workloads.echo" in command(p) for p in started):
            assert bench.poll() is None, bench.stderr.read()
            assert time.monotonic() < deadline, "the bench never started a server"
            with contextlib.suppress(psutil.Error):
                started = psutil.Process(bench.pid).children(recursive=True)
            time.sleep(0.05)  # polling for a condition, not waiting out a race
        bench.send_signal(signal.SIGTERM)
        _, stderr = bench.communicate(timeout=60)
    finally:
        bench.kill()
    assert bench.returncode == 128 + signal.SIGTERM, stderr
    assert "run again to resume" in stderr
    _, alive = psutil.wait_procs(started, timeout=10)
    assert not alive, [p.cmdline() for p in alive]


# -- micro: the program runs every operation of a style; a failing one is reported --------


def test_micro_under_pyperf_measures_each_operation_in_worker_processes(tmp_path):
    """pyperf's run is read back into one record: median ns, spread, calibration, warnings."""
    point = Point("micro", (("harness", "pyperf"), ("processes", 2), ("values", 2)), (), 1)
    cores = SimpleNamespace(subject=None, peer=None)
    record = micro_measure.measure(point, Row("asyncio", "callbacks"), cores, tmp_path, False)
    assert set(micro.OPERATIONS) - {"spawn_join"} <= set(record)  # the callbacks operations
    assert all(record[op] > 0 for op in ("switch", "call_soon", "timer"))
    assert record["calibrated_n"]["switch"] >= 1
    assert set(record["stdev_pct"]) == {"switch", "call_soon", "timer"}
    assert isinstance(record["pyperf_warnings"], dict)


@pytest.mark.timeout(120)
def test_micro_program_measures_every_operation_of_each_style(tmp_path):
    for loop, style, expected in (
        ("asyncio", "callbacks", {"switch", "call_soon", "timer"}),
        ("asyncio", "coroutines", {"switch", "spawn_join", "timer"}),
        ("greenlets", "blocking", {"switch", "spawn_join", "timer"}),
    ):
        out = tmp_path / f"{style}.json"
        subprocess.run(
            [
                *(sys.executable, "-m", "bench.studies.micro.measure"),
                *("--loop", loop, "--style", style),
                *("--min-time", "0.001", "--runs", "2", "--json", str(out)),
            ],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=100,
        )
        operations = json.loads(out.read_text())["operations"]
        assert set(operations) == expected
        assert all(len(o["ns_per_op"]) == 2 and o["median"] > 0 for o in operations.values())


def test_a_loop_failing_an_operation_is_reported_for_that_operation_only():
    class Broken:
        def call_soon(self, callback, *args):
            callback(*args)

        def call_later(self, delay, callback, *args):
            raise RuntimeError("no timers here")

        def run_forever(self):
            pass

        def stop(self):
            pass

        def close(self):
            pass

    variant = SimpleNamespace(api=lambda style: Broken)
    outcome = micro_measure.measure_operation(variant, "callbacks", "timer", 0.001, 1)
    assert outcome == {"error": "RuntimeError: no timers here"}


def test_code_lines_leave_out_blanks_comments_and_docstrings(tmp_path):
    source = tmp_path / "sample.py"
    source.write_text(
        '"""Module docstring\nover two lines."""\n\n'
        "# a comment\n"
        "def f(x):\n"
        '    """Docstring."""\n'
        "    return (x +\n"
        "            1)  # trailing comment\n"
    )
    assert codesize.count(source) == (8, 3)


def test_the_glance_counts_a_loops_code_lines_as_the_code_size_table_does():
    """One count: the glance once took essence.py in, the table left it out (915 against 841)."""
    from bench.pages import glance

    table = {row[0]: (row[4], row[5]) for row in codesize.loop_rows()}
    for variant in loops.discover().values():
        code, for_asyncio = table[f"`loops/{variant.name}/`"]
        if for_asyncio == "–":
            assert glance.code_lines(variant.name, codesize.ROOT) == f"{code:,}"
        else:  # the loop alone, then what being asyncio's event loop adds
            alone = code - int(for_asyncio.replace(",", ""))
            assert glance.code_lines(variant.name, codesize.ROOT) == (
                f"{alone:,} + {for_asyncio} asyncio API"
            )


def test_what_only_the_asyncio_loop_factory_loads_is_counted_apart():
    """The callbacks loop's drop-in (dropin.py and the transports it needs) is loaded only by
    its asyncio_loop factory: the reactor alone is what the bare loop imports."""
    api = codesize.asyncio_api_files()
    callbacks = codesize.ROOT / "loops" / "callbacks"
    assert {p.name for p in api if p.parent == callbacks.resolve()} >= {
        "dropin.py", "transports.py"
    }  # fmt: skip
    assert (callbacks / "reactor.py").resolve() not in api
    alone, for_asyncio = codesize.loop_and_asyncio_api(callbacks)
    assert alone > 0 and for_asyncio > alone  # the API is bigger than the loop under it
    assert codesize.loop_and_asyncio_api(codesize.ROOT / "loops" / "traps")[1] == 0


# -- fitting the full run to the machine: resume, caps, fewer repetitions -----------------------


def test_an_interrupted_run_resumes_repetition_by_repetition(fake, tmp_path):
    fake.interrupt_after = 4  # inside the first point's second round
    with pytest.raises(KeyboardInterrupt):
        run_fake(tmp_path)
    first = list(fake.calls)
    partial = stored(tmp_path)["points"]["n=1"]["rows"]
    assert sum(len(entry["reps"]) for entry in partial.values()) == 4  # each saved as it ended
    fake.interrupt_after = None
    fake.calls.clear()
    run_fake(tmp_path)
    measured = [call for call in first + fake.calls if call[1] != "asyncio/coroutines"]
    # Every non-baseline repetition ran exactly once over the two runs: nothing redone.
    counts = {call: measured.count(call) for call in measured}
    assert counts == {
        (p, r): 2 for p in ("n=1", "n=2") for r in ("callbacks/callbacks", "uvloop/callbacks")
    }
    for point in stored(tmp_path)["points"].values():
        for entry in point["rows"].values():
            assert len(entry["reps"]) == 2 and not any("error" in rep for rep in entry["reps"])
    fake.calls.clear()
    run_fake(tmp_path)
    assert fake.calls == []


def test_a_row_over_its_cap_is_stored_as_did_not_finish(fake, tmp_path):
    fake.overrunning = "uvloop/callbacks"
    run_fake(tmp_path)
    assert fake.calls.count(("n=1", "uvloop/callbacks")) == 1  # not repeated past its cap
    entry = stored(tmp_path)["points"]["n=1"]["rows"]["uvloop/callbacks"]
    assert entry["reps"][0]["did_not_finish_s"] == 5.0
    summary = summarize(entry["reps"], FakeWorkload.METRICS)
    assert summary.status == "did not finish"
    assert "5 s" in summary.reason
    fake.calls.clear()
    run_fake(tmp_path)
    assert fake.calls == []  # a stored result, not a hole to fill
    # Under another cap the row may finish: measured again, and only that row.
    fake.cap_s, fake.overrunning = 50.0, None
    run_fake(tmp_path)
    assert {row for _, row in fake.calls} == {"asyncio/coroutines", "uvloop/callbacks"}
    assert stored(tmp_path)["points"]["n=1"]["rows"]["uvloop/callbacks"]["reps"][0]["value"]


def test_a_sleep_run_over_its_cpu_cap_is_stopped_as_did_not_finish(tmp_path):
    """The cap is CPU time (RLIMIT_CPU), so a busy machine cannot fake a did-not-finish."""
    from bench.studies import sleep
    from bench.studies.sleep.measure import CpuCapReached, measure

    params = (("mode", "sleepers"), ("tasks", 400_000), ("max_delay", 1.0))
    point = Point("sleep", params, (), 1, None, 1.0)  # one second of CPU: far too little
    cores = SimpleNamespace(subject=None, peer=None)
    with pytest.raises(CpuCapReached) as raised:
        measure(point, Row("asyncio", "callbacks"), cores, tmp_path, True)
    assert raised.value.cap_s == 1.0 and "s of CPU" in str(raised.value)
    reps = [{"error": str(raised.value), "did_not_finish_s": 1.0, "did_not_finish_kind": "cpu"}]
    assert summarize(reps, sleep.METRICS).reason.startswith("in 1 s of CPU")


def test_a_steady_row_stops_at_its_minimum_a_noisy_one_runs_to_its_maximum(fake, tmp_path):
    fake.repetitions = (5, 3)
    fake.noisy = "callbacks/callbacks"
    run_fake(tmp_path)
    assert fake.calls.count(("n=1", "uvloop/callbacks")) == 3  # spread 0: three suffice
    assert fake.calls.count(("n=1", "callbacks/callbacks")) == 5  # spread 67%: all five
    fake.calls.clear()
    run_fake(tmp_path)
    assert fake.calls == []  # both complete by the rule


def test_a_stated_limit_is_shown_as_a_limit_not_a_crash():
    reps = [{"error": "sleep exited 1\nValueError: filedescriptor out of range in select()"}]
    summary = summarize(reps, FakeWorkload.METRICS)
    assert summary.status == "limit"
    assert "1 024" in summary.reason
    assert summarize([{"error": "Traceback: KeyError"}], FakeWorkload.METRICS).status == "failed"


# -- the at-a-glance table and the scale section: rendering, from synthetic stored data ---------


def test_the_report_opens_with_the_glance_table_and_a_sentence_per_workload(results, tmp_path):
    reports = tmp_path / "reports"
    (reports).mkdir()
    (reports / "conformance.md").write_text(
        "| property | asyncio | callbacks |\n|---|---|---|\n"
        "| one | cb ✅ co ✅ | cb ✅ |\n| two | cb ⚠️ co ✅ | cb ❌ |\n"
        "| **topic: cases** | **4✅** | **1✅** |\n"
    )
    report.render_all(results, reports)
    lines = (reports / "bench.md").read_text().splitlines()
    start = lines.index("## At a glance")
    assert start < 60
    end = next(i for i, ln in enumerate(lines) if i > start and ln.startswith("## "))
    glance = lines[start:end]
    echo_part = "\n".join(glance).split("### The other workloads")[0].splitlines()
    other_part = "\n".join(glance).split("### The other workloads")[1].splitlines()
    glance_rows = {ln.split("|")[1].strip(): ln for ln in echo_part if ln.startswith("| ")}
    other_rows = {ln.split("|")[1].strip(): ln for ln in other_part if ln.startswith("| ")}
    callbacks = [c.strip() for c in glance_rows["callbacks · callbacks"].split("|")[1:-1]]
    assert callbacks[1] == "2,000"  # echo: the figure, then its ratio to asyncio-protocol
    assert callbacks[2].startswith("×2.00 [") and callbacks[2].endswith("faster")
    assert callbacks[6] == "1/2"  # conformance: one of two claimed properties passes
    assert glance_rows["asyncio · callbacks"].split("|")[7].strip() == "1/2"  # ⚠️: not holding
    assert len(callbacks) <= 8  # no table wider than 8 columns
    switch = [c.strip() for c in other_rows["callbacks · callbacks"].split("|")[1:-1]]
    assert switch[1] == "3,000 (×0.50)"  # switch: half asyncio's; one value a side: no interval
    # Rows are grouped and labelled by kind; the servers a user would write close the table.
    assert [k for k in glance_rows if k.startswith("**")] == [
        "**reference loops**",
        "**home-made loops**",
        "**anchor servers**",
    ]
    assert list(glance_rows)[-3:] == [
        "asyncio-streams (anchor)",
        "asyncio-protocol (anchor)",
        "uvloop-protocol (anchor)",
    ]
    assert "invalid" in glance_rows["uvloop · coroutines"]  # a word, never the saturated figure
    sentences = [ln for ln in glance if ln.startswith("- **")]
    echo_line = next(ln for ln in sentences if ln.startswith("- **Echo throughput"))
    assert (
        "callbacks · callbacks leads at 2,000 requests/s (×2.00 asyncio-protocol, same" in echo_line
    )
    assert "1.29× better than the next, uvloop · callbacks" in echo_line  # 2,000 over 1,550
    assert any("every claimed property holds in 1 of 3" in ln for ln in sentences)


def test_the_glance_marks_a_figure_from_another_session_and_says_so_of_the_gap():
    """Absolute figures from two sessions of a shared machine are not a same-run comparison:
    the glance carries the tables' † and ‡, and its sentence says when the two it compares
    come from different sessions."""
    from bench.pages import glance
    from bench.render.rows import RenderedRow
    from bench.summary import RowSummary, Stat

    column = next(c for c in glance.columns() if c.metric == "requests_per_s")

    def rendered(variant, rate, session, earlier=False, stale=False):
        summary = RowSummary("ok", stats={"requests_per_s": Stat(rate, rate, rate)})
        return RenderedRow(
            Row(variant, "callbacks"), "home-made", session, summary, None, stale, earlier
        )

    old = rendered("callbacks", 2000.0, "s1", earlier=True, stale=True)
    assert glance.cell(column, old) == "2,000†‡"
    new = rendered("uvloop", 1000.0, "s2")
    assert glance.cell(column, new) == "1,000"
    assert "different sessions" in glance.sentence(column, [old, new])
    same = rendered("uvloop", 1000.0, "s1", earlier=True)
    assert "different sessions" not in glance.sentence(column, [old, same])


def test_the_glance_reads_each_design_against_the_servers_a_user_would_write():
    """The baseline of × asyncio is the lab's contract over sock_recv; the columns and the
    sentence beside it read the fixed-load cost against asyncio-protocol and uvloop-protocol."""
    from bench.pages import glance
    from bench.render.rows import RenderedRow
    from bench.summary import RowSummary, Stat

    def rendered(row, cost):
        summary = RowSummary("ok", stats={"server_cpu_us": Stat(cost, cost, cost)})
        return RenderedRow(row, row.kind, "s", summary, None, False, False)

    protocol, best = (
        rendered(Row(n, "native", anchor=True), c)
        for n, c in (("asyncio-protocol", 20.0), ("uvloop-protocol", 16.0))
    )
    rows = [
        rendered(Row("traps", "coroutines"), 18.0),
        rendered(Row("asyncio", "coroutines"), 60.0),
        protocol,
        best,
    ]
    assert glance._against(rows[0], protocol) == "×0.90"
    assert glance._against(rows[0], best) == "×1.12"
    text = glance.against_sentence(rows)
    assert "1 of the 2 variant·style rows measured in the session of these servers cost less" in (
        text
    )
    assert (
        "the cheapest home-made design, traps · coroutines, costs 18.0 µs, ×1.12 "
        "uvloop-protocol's 16.0 µs" in text
    )
    assert "not measured" in glance.against_sentence(rows[:2])  # no user server, no claim
    # A row of another session is compared with nothing of this one: the machine drifts between
    # sessions, so a ratio across two would read the drift.
    summary = rows[0].summary
    other = RenderedRow(Row("futures", "coroutines"), "home-made", "t", summary, None, False, False)
    assert glance._against(other, protocol) == "other session"
    assert "1 of the 2 variant·style rows" in glance.against_sentence([*rows, other])
    assert "sock_recv" in glance.BASELINE_MEANS


def scale_rows(costs: dict[str, dict[int, float | str]]):
    """Rendered rows of a synthetic sleep series: per label, cost per sleeper (or a status)."""
    from bench.render.rows import RenderedRow
    from bench.summary import RowSummary, Stat

    points = {}
    for label, by_n in costs.items():
        variant, style = label.split("/")
        for n, cost in by_n.items():
            if isinstance(cost, str):
                summary = RowSummary(cost, "in 120 s (its time cap; killed)")
            else:
                summary = RowSummary("ok", stats={"cpu_per_sleeper_us": Stat(cost, cost, cost)})
            rendered = RenderedRow(
                Row(variant, style), "home-made", "s", summary, None, False, False
            )
            points.setdefault(n, []).append(rendered)
    return [
        ({"mode": "sleepers", "tasks": n, "max_delay": 1.0}, rows) for n, rows in points.items()
    ]


def test_scale_compares_each_exponent_with_the_floors_over_the_same_two_n():
    from bench.pages.scale import Curve, against_the_floor

    def curve(label, costs):
        return Curve(label, "anchor", costs, {})

    floor = curve("selectors-floor (anchor)", {1000: 10.0, 10_000: 10.0 * 10**0.44})
    near = curve("traps · coroutines", {1000: 20.0, 10_000: 20.0 * 10**0.50})
    beyond = curve("asyncio · callbacks", {1000: 20.0, 10_000: 20.0 * 10**0.62})
    elsewhere = curve("handlers · callbacks", {100: 5.0, 1000: 50.0})  # another N range
    (sentence,) = against_the_floor([floor, near, beyond, elsewhere])
    assert "has k = +0.44 (1,000→10,000): 1 of the 2 other rows" in sentence
    assert "beyond it: asyncio · callbacks (+0.62)." in sentence
    assert "handlers" not in sentence
    assert against_the_floor([near, beyond]) == []  # no floor, nothing to say


def test_scale_exponents_come_from_the_two_largest_finished_points(tmp_path):
    from bench.pages import scale

    points = scale_rows(
        {
            "heap/coroutines": {1000: 10.0, 10_000: 10.0, 100_000: 10.0},
            "list/coroutines": {1000: 1.0, 10_000: 10.0, 100_000: "did not finish"},
            "amortised/callbacks": {1000: 40.0, 10_000: 10.0, 100_000: 2.5},
        }
    )
    series = scale.SERIES[0]
    found = {c.label: c for c in scale.curves(series, points)}
    heap, listed, amortised = (
        found[k] for k in ("heap · coroutines", "list · coroutines", "amortised · callbacks")
    )
    assert heap.exponent() == (0.0, 10_000, 100_000)
    k, n1, n2 = listed.exponent()
    assert (round(k, 6), n1, n2) == (1.0, 1000, 10_000)  # quadratic in total, then no figure
    assert round(amortised.exponent()[0], 6) == round(-0.60206, 6)
    text = scale.table(series, list(found.values()))
    listed_line = next(ln for ln in text.splitlines() if "list · coroutines" in ln)
    assert "**did not finish in 120 s" in listed_line and "total ∝ N^2.00" in listed_line
    assert "no figure at 100,000" in listed_line
    said = scale.sentences(series, list(found.values()))
    assert "highest: list · coroutines (k = +1.00)" in said
    assert "No figure (did not finish): list · coroutines at 100,000" in said
    lines = scale.section(
        lambda name: points if name == "sleep" else [], "full", tmp_path, tmp_path / "r.md"
    )
    assert "### CPU per sleeper by sleepers" in lines
    assert (tmp_path / "full-scale-sleep.png").stat().st_size > 0


def test_runner_narrowed_to_points_by_parameter(fake, tmp_path):
    run_fake(tmp_path, where={"n": "2"})
    assert {point for point, _ in fake.calls} == {"n=2"}
    fake.calls.clear()
    run_fake(tmp_path, where={"missing": "1"})
    assert fake.calls == []


def test_a_rows_fingerprint_follows_its_code_not_its_prose(tmp_path):
    folder = tmp_path / "loops" / "zz"
    folder.mkdir(parents=True)
    (tmp_path / "workloads" / "echo").mkdir(parents=True)
    (folder / "loop.py").write_text("x = 1\n")
    (folder / "README.md").write_text("the idea\n")
    row = Row("zz", "callbacks")
    before = row_fingerprint("echo", echo.STUDY.running, row, tmp_path)
    (folder / "README.md").write_text("the idea, told better\n")
    assert row_fingerprint("echo", echo.STUDY.running, row, tmp_path) == before
    (folder / "deviations.toml").write_text("# what conformance expects of it\n")
    assert row_fingerprint("echo", echo.STUDY.running, row, tmp_path) == before
    # A docstring or a comment reworded, an essence rewritten: nothing a measurement runs.
    (folder / "loop.py").write_text('"""What it is, told better."""\n\nx = 1  # why\n')
    assert row_fingerprint("echo", echo.STUDY.running, row, tmp_path) == before
    (folder / "essence.py").write_text("print('the idea alone')\n")
    assert row_fingerprint("echo", echo.STUDY.running, row, tmp_path) == before
    (folder / "loop.py").write_text("x = 2\n")
    assert row_fingerprint("echo", echo.STUDY.running, row, tmp_path) != before
    (folder / "loop.py").write_text("x = 1\nprint('a side effect')\n")
    assert row_fingerprint("echo", echo.STUDY.running, row, tmp_path) != before


def test_a_rows_fingerprint_follows_the_workload_packages_its_workload_imports(tmp_path):
    # echo's style files import workloads.tls (its TLS layers): an edit there stales echo's
    # rows, not sleep's, whose files import no other package of workloads/.
    for name in ("echo", "sleep", "tls"):
        (tmp_path / "workloads" / name).mkdir(parents=True)
    (tmp_path / "workloads" / "echo" / "callbacks.py").write_text("from workloads.tls import x\n")
    (tmp_path / "workloads" / "sleep" / "callbacks.py").write_text(
        "from workloads.common import y\n"
    )
    layer = tmp_path / "workloads" / "tls" / "callbacks.py"
    layer.write_text("x = 1\n")
    row = Row("zz", "callbacks")

    def now(workload):
        return row_fingerprint(workload, echo.STUDY.running, row, tmp_path)

    echo_before, sleep_before = now("echo"), now("sleep")
    layer.write_text("x = 2\n")
    assert now("echo") != echo_before
    assert now("sleep") == sleep_before


# -- the workload protocol: a registered workload is measured, stored and rendered -------------


def test_a_registered_workload_is_measured_stored_and_rendered(monkeypatch, tmp_path):
    """A workload made for the test, registered and nothing else: the run measures it (real
    processes), the store keeps it, the report renders its section, table and chart."""
    from tests import tiny_workload

    monkeypatch.setattr(registry, "STUDIES", (*registry.STUDIES, tiny_workload.STUDY))
    results, reports = tmp_path / "results", tmp_path / "reports"
    console = Console(file=io.StringIO())
    assert runner.run(["tiny"], False, None, False, results, console=console) == 0
    stored = json.loads(results_path(results, "quick", "tiny", RUNNING).read_text())
    assert set(stored["points"]) == {"sleep_ms=1", "sleep_ms=2"}
    for point in stored["points"].values():
        assert set(point["rows"]) == {"asyncio/coroutines", "traps/coroutines"}
        for entry in point["rows"].values():
            assert "error" not in entry["reps"][0], entry["reps"][0]
            assert entry["reps"][0]["wall_ms"] > 0
    written = report.render_all(results, reports)
    text = (reports / "bench.md").read_text()
    assert "## Tiny" in text and "[Tiny](#tiny)" in text
    assert "### One sleep of 2 ms" in text
    # one repetition a row: the ratio bare, with no zero-width interval
    assert re.search(r"\| traps · coroutines\s*\|\s*[\d.]+ \|\s*×[\d.]+ \|", text), text
    assert reports / "charts" / "quick-tiny-wall.png" in written


def test_the_bench_readme_names_every_core_module_and_each_study_its_own():
    """bench/README.md is the core's map; a study's modules are named by its folder's README."""
    readme = (ROOT / "bench" / "README.md").read_text()
    studies_dir = ROOT / "bench" / "studies"
    for path in sorted((ROOT / "bench").rglob("*.py")):
        folder = path.parent
        if folder.parent == studies_dir:  # a study's module: its own README names it
            own = (folder / "README.md").read_text()
            assert f"`{path.name}`" in own, f"{folder.name}/README.md does not name {path.name}"
            continue
        relative = path.relative_to(ROOT / "bench").as_posix()
        assert f"`{relative}`" in readme, relative
    for recipe in ("Add a study", "Add a metric", "Add a column", "Add a chart"):
        assert f"**{recipe}.**" in readme
    for study in sorted(p.name for p in studies_dir.iterdir() if (p / "__init__.py").exists()):
        assert f"(studies/{study}/README.md)" in readme, f"the map does not link {study}"


def test_every_path_the_bench_readme_names_exists():
    """A path in backquotes or a link, read from bench/ (or from the root, where it starts with
    a folder of the root), exists, and a file's name alone names a file of the bench or a page;
    <name> and the like are placeholders, not paths."""
    readme = (ROOT / "bench" / "README.md").read_text()
    named = re.findall(r"`([\w./-]+/[\w./-]*|[\w-]+\.(?:py|md|json|toml))`", readme)
    named += re.findall(r"\]\(([^)#]+)\)", readme)
    assert len(named) > 40, named  # the reading found the map
    missing = []
    for name in named:
        if name.startswith(("http", "reports/charts/", "reports/results/", ".venvs/")):
            continue
        if "/" not in name:  # a file's name alone: some file of the bench or its pages
            if not any((ROOT / "bench").rglob(name)) and not (ROOT / "reports" / name).exists():
                missing.append(name)
        elif not ((ROOT / "bench" / name).exists() or (ROOT / name).exists()):
            missing.append(name)
    assert not missing, missing


# -- a variant unavailable on this interpreter: skipped by the run, named by the report ------

UNAVAILABLE_VARIANT = """
from loops import Variant, requires

with requires("no_such_frobnicator"):
    import no_such_frobnicator

VARIANT = Variant(
    name="zz_unavailable",
    summary="never seen: the import above fails first",
    lineage="tests/test_bench.py",
    capabilities=frozenset({"core"}),
    coroutines=no_such_frobnicator,
)
"""


def test_an_unavailable_variant_is_skipped_and_each_report_section_says_why(results, tmp_path):
    extra = tmp_path / "extra" / "zz_unavailable"
    extra.mkdir(parents=True)
    (extra / "__init__.py").write_text(UNAVAILABLE_VARIANT)
    env = {**os.environ, "LAB_EXTRA_LOOPS": str(extra.parent), "PYTHONDONTWRITEBYTECODE": "1"}
    # The committed anatomy, as if measured on this fixture's machine: a page shows a side
    # study of its own machine only.
    anatomy = json.loads((ROOT / "reports/results/anatomy.json").read_text())
    (results / "anatomy.json").write_text(json.dumps({**anatomy, "environment": ENV}))
    said = f"unavailable on Python {loops.PYTHON}: no_such_frobnicator does not load"

    def bench(*args: str, stored: Path = results) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "bench", *args, "--results", str(stored)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    # Narrowed to no point at all, so that nothing runs: the skip is said before planning.
    run = bench("run", "--loop", "zz_unavailable", "--where", "tasks=0", stored=tmp_path / "none")
    assert run.returncode == 0, run.stderr
    # The run names the interpreter as its results do (RUNNING: "debian-3.14" in Debian's root).
    ran_on = said.replace(f"Python {loops.PYTHON}", f"Python {RUNNING}")
    assert "skipping zz_unavailable" in run.stderr and ran_on in " ".join(run.stderr.split())
    assert "nothing to measure" in run.stderr
    done = bench("report")
    assert done.returncode == 0, done.stderr
    text = (results.parent / "bench.md").read_text()
    glance = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    # Said once for the page (not once per table, which repeated it a dozen times), and in no
    # table's rows.
    assert text.count(f"zz_unavailable, {said}") == 1
    assert "| zz_unavailable " not in glance
    for title in ("Echo", "Sleep", "Crawler", "Micro"):
        section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
        assert section.count("| variant · style") and "| zz_unavailable " not in section, title
        assert f"zz_unavailable: {said}" not in section, title
    anatomy = text.split("## Cost anatomy", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"No row for [^:]*zz_unavailable[^:]*: unavailable here\.", anatomy)


def test_the_http_section_says_where_the_pure_python_loop_stands_between_asyncio_and_uvloop():
    from bench.render.rows import RenderedRow
    from bench.studies import http
    from bench.summary import RowSummary, Stat

    def rendered(variant, cost):
        summary = RowSummary("ok", stats={"server_cpu_us": Stat(cost, cost, cost)})
        return RenderedRow(Row(variant, http.STYLE), "x", "s", summary, None, False, False)

    rows = [rendered("asyncio", 33.0), rendered("uvloop", 28.0), rendered("callbacks", 31.0)]
    (text,) = http_render.observations({"connections": 50}, rows)
    assert "31.0 µs of server CPU per request, against asyncio's 33.0 and uvloop's 28.0" in text
    assert "40% of the way from asyncio's cost to uvloop's" in text
    cheaper = [*rows[:2], rendered("callbacks", 27.0)]
    assert "cheaper than uvloop" in http_render.observations({}, cheaper)[0]
    assert http_render.observations({}, rows[:2]) == []  # no callbacks row: no claim
    # The rows are the variants that declare an asyncio loop, from discovery.
    assert {r.variant for r in http.rows()} >= {"asyncio", "uvloop", "callbacks"}
    assert {"traps", "futures"}.isdisjoint(r.variant for r in http.rows())


def test_rows_stored_where_a_variant_loads_stay_in_tables_rendered_where_it_does_not():
    """A table reads the same whichever interpreter renders it: the rows of a variant this
    interpreter cannot load (asyncio_eager on 3.11, curio on 3.12+), measured where it loads,
    are kept with their figures; that it cannot load is said once per page (not as a row); a
    variant that is gone is dropped."""
    from bench.plan import unavailable_variants
    from bench.render.rows import rendered_rows
    from bench.studies import sleep

    elsewhere = next(v.name for v in loops.discover().values() if not v.available)
    entry = {"session": "s1", "reps": [{"cpu_per_sleeper_us": 1.0}], "code": "x"}
    point = {
        "params": {},
        "rows": {
            f"{elsewhere}/coroutines": {**entry, "variant": elsewhere, "style": "coroutines"},
            "gone/coroutines": {**entry, "variant": "gone", "style": "coroutines"},
        },
        "baselines": {},
    }
    expected = (Row("traps", "coroutines"),)
    rows = rendered_rows(sleep.STUDY, point, expected)
    assert {r.row.variant for r in rows} == {elsewhere, "traps"}
    assert next(r for r in rows if r.row.variant == elsewhere).summary.status == "ok"
    assert elsewhere in unavailable_variants()  # said once on the page, not as a row


def test_two_sessions_whose_baselines_differ_take_no_ratio_across_them(tmp_path):
    """asyncio-protocol measured at 20 µs in session A and 40 µs in session B: a row of A is
    read against A's 20, a row of B against B's 40, a row of C (no asyncio-protocol) against
    nothing; the table prints each earlier row's own denominator."""
    from bench.render.rows import rendered_rows
    from bench.render.tables import table

    workload = registry.get("echo")
    path = results_path(tmp_path, "quick", "echo")
    store = ResultStore.empty(path, "echo", "quick", workload.kept)
    point = next(p for p in echo.points(full=False) if p.args.get("measure") == "paced")
    protocol = Row("asyncio-protocol", "native", anchor=True)
    for session, base, row, cost in (
        ("A", 20, Row("callbacks", "callbacks"), 10),
        ("B", 40, Row("traps", "coroutines"), 20),
        ("C", None, Row("futures", "coroutines"), 15),
    ):
        store.add_session(session, ENV, ["python", "-m", "bench", "run"])
        if base is not None:
            reps = [paced_rep(base * f) for f in (0.99, 1.0, 1.01)]
            store.put(point, protocol, session, fingerprint(workload, protocol), reps)
        reps = [paced_rep(cost * f) for f in (0.99, 1.0, 1.01)]
        store.put(point, row, session, fingerprint(workload, row), reps)
    rows = {r.row.variant: r for r in rendered_rows(workload, store.data["points"][point.key])}
    cost = workload.metric("server_cpu_us")
    assert rows["callbacks"].ratio(cost) == pytest.approx(0.5)  # A's 20, never B's 40
    assert rows["traps"].ratio(cost) == pytest.approx(0.5)  # B's 40
    assert rows["futures"].ratio(cost) is None  # no asyncio-protocol in session C
    text = table(workload.columns_at(point.args), list(rows.values()))
    callbacks = row_lines(text, "| callbacks · callbacks†")
    assert "×0.50 [" in callbacks and "(of 20.0†)" in callbacks
    assert "not in this session" in row_lines(text, "| futures · coroutines")
    # The controls moved beyond their spread (20 then 40): the page says so under the table.
    from bench.pages.report import controls_moved

    flag = " ".join(controls_moved(workload, store.data["points"][point.key]))
    assert "**Controls moved:** asyncio-protocol 20.0 [19.8–20.2] in session A, 40.0" in flag


def _form_faults(text: str) -> list[str]:
    """Tables wider than 8 columns and prose paragraphs (or list items) over 120 words."""
    faults = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.strip().splitlines()
        if not lines:
            continue
        if lines[0].startswith("|"):
            width = max(len(ln.strip().strip("|").split("|")) for ln in lines)
            if width > 8:
                faults.append(f"{width} columns: {lines[0][:80]}")
            continue
        items = lines if lines[0].lstrip().startswith("- ") else [" ".join(lines)]
        faults += [f"{len(i.split())} words: {i[:80]}" for i in items if len(i.split()) > 120]
    return faults


def test_no_table_wider_than_8_columns_and_no_paragraph_over_120_words(results, tmp_path):
    """The report's readable form (tables a screen wide, paragraphs short), on a report rendered
    from the fixture and on the committed ones."""
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    assert _form_faults((reports / "bench.md").read_text()) == []
    for name in ("bench.md", "bench-full.md"):
        committed = ROOT / "reports" / name
        if committed.exists():
            assert _form_faults(committed.read_text()) == [], name


def test_the_index_names_every_section_and_the_reports_link_each_other(results, tmp_path):
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    text = (reports / "bench.md").read_text()
    index = next(ln for ln in text.splitlines() if ln.startswith("Sections: "))
    for heading in re.findall(r"^## (.+)$", text, flags=re.M):
        assert f"[{heading}](#{heading.lower().replace(' ', '-')})" in index, heading
    for target in ("bench-full.md", "conformance.md", "timelines.md", "site/index.html"):
        assert f"]({target}" in text, target
    assert "](../README.md)" in text
    # said once, not once per table (the Interpreters section names each interpreter's own)
    before = text.split("\n## Interpreters\n")[0] + text.split("\n## Code size\n")[-1]
    assert before.count(f"unavailable on Python {loops.PYTHON}") <= 1


def test_the_glance_draws_cost_with_intervals_cost_against_code_and_latency(results, tmp_path):
    """The glance's charts at the fixed load: cost bars (values, intervals, a legend, labelled
    lines), cost against code lines with conformance marked, latency percentiles."""
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    text = (reports / "bench.md").read_text()
    for name in ("quick-glance-echo-cost", "quick-glance-cost-code", "quick-glance-echo-latency"):
        assert (reports / "charts" / f"{name}.png").exists(), name
        assert f"(charts/{name}.png)" in text, name


def test_a_client_bound_row_is_drawn_at_least_its_figure_at_the_top_not_left_out(results):
    """uvloop · coroutines saturated the load generator at 5,100 requests/s: the requests chart
    draws it as '≥ 5,100', ranked first, instead of leaving it out (a row left out reads as no
    figure at all)."""
    from bench.render import charts
    from bench.render.rows import stored_points

    stores = report.main_tables(results, "quick")[1]
    points = [(None, *pair) for pair in stored_points(stores, "quick")("echo")]
    workload = registry.get("echo")
    spec = next(c for c in workload.charts if c.name == "requests")
    series, _, missing, bounds = charts._series(spec, workload.metric(spec.metric), points)
    assert ("uvloop · coroutines", 100) in bounds
    assert ("uvloop · coroutines", 100) not in missing
    assert series[1024]["uvloop · coroutines"][100][0] == 5100


def test_the_crawler_says_why_it_finds_more_urls_than_the_sites_pages(results, tmp_path):
    reports = tmp_path / "reports"
    report.render_all(results, reports)
    crawler = (reports / "bench.md").read_text().split("\n## Crawler\n")[1].split("\n## ")[0]
    said = next(ln for ln in crawler.splitlines() if ln.startswith("*Why more than 1,000"))
    assert "955 of its 1,000 pages" in said and "569 redirect URLs" in said
    assert "1,524 in all" in said


def test_fixed_load_cost_is_read_against_closed_loop_cost_row_by_row():
    def pt(paced: bool, costs: dict) -> dict:
        params = {"size": 1024, "connections": 100}
        if paced:
            params = {"measure": "paced", **params, "rate": headline.HEADLINE_RATE}
        rows = {
            key: {"session": "S", "reps": [{"server_cpu_us": c, "peer_cpu_share": 0.5}] * 3}
            for key, c in costs.items()
        }
        return {"params": params, "rows": rows, "baselines": {}}

    points = {
        "closed": pt(False, {"handlers/callbacks": 10.0, "traps/coroutines": 10.0}),
        "paced": pt(True, {"handlers/callbacks": 40.0, "traps/coroutines": 25.0}),
    }
    (said, _) = echo_render.fixed_against_closed(points)
    assert "is 2.5× (traps · coroutines: 25.0 against 10.0 µs)" in said
    assert "to 4.0× (handlers · callbacks: 40.0 against 10.0 µs)" in said
    assert "over 2 rows" in said


def test_an_interpreter_whose_every_row_rose_20_percent_reads_no_change():
    """Each interpreter's rows are read against its own same-session controls, so a
    session where every row (controls too) rose by one factor says 'no change'; a row that rose
    alone, beyond its spread, says 'dearer'."""
    from bench.render import drift
    from bench.studies import echo

    controls = echo.STUDY.controls

    def compare(reference: dict, other: dict, higher_is_better: bool) -> dict:
        """Two sessions' rows, each against its own session's controls, as the section reads."""
        found = {}
        for key in sorted(reference.keys() & other.keys() - set(controls)):
            change = drift.relative_change(
                other[key], [other.get(c, []) for c in controls],
                reference[key], [reference.get(c, []) for c in controls],
                higher_is_better,
            )  # fmt: skip
            if change is not None:
                found[key] = change
        return found

    base = {
        "asyncio-protocol/native": [24.0, 24.4, 24.8],
        "uvloop-protocol/native": [20.6, 20.8, 21.0],
        "selectors-floor/native": [12.0, 12.2, 12.4],
        "traps/coroutines": [23.9, 24.3, 24.7],
        "handlers/callbacks": [49.0, 49.6, 50.2],
    }
    drifted = {key: [v * 1.2 for v in values] for key, values in base.items()}
    compared = compare(base, drifted, higher_is_better=False)
    assert set(compared) == {"traps/coroutines", "handlers/callbacks"}
    # No direction is read: the drift cancels (within ±5%, or can't tell at three a side).
    assert all(said.startswith(("within", "can't tell")) for *_, said in compared.values())
    assert all(abs(ratio - 1) < 1e-9 for ratio, *_ in compared.values())
    drifted["handlers/callbacks"] = [v * 1.5 for v in drifted["handlers/callbacks"]]
    assert compare(base, drifted, higher_is_better=False)["handlers/callbacks"][3] == ("dearer")
    assert compare(base, {"traps/coroutines": [1.0]}, higher_is_better=False) == {}


def test_a_single_repetition_a_side_gives_no_interval_and_no_word():
    """pyperf's micro rows store one mean a row: a bootstrap of one value is a zero-width
    interval that would call any difference certain ("×0.63 [0.63–0.63] cheaper"). No
    interval is drawn, and a table prints the bare ratio with no word."""
    from bench.plan import Metric
    from bench.render import intervals
    from bench.render.rows import RenderedRow
    from bench.render.tables import ratio_cell
    from bench.summary import summarize

    assert intervals.ratio_interval([1.0], [2.0, 2.1]) is None
    assert intervals.ratio_interval([1.0, 1.1], [2.0]) is None
    assert intervals.ratio_interval([1.0, 1.1], [2.0, 2.1]) is not None
    switch = Metric("switch", "switch (ns)", higher_is_better=False)
    row = RenderedRow(
        Row("traps", "coroutines"), "home-made", "S",
        summarize([{"switch": 466.0}], [switch]), summarize([{"switch": 1501.0}], [switch]),
        False, False,
    )  # fmt: skip
    cell = ratio_cell(row, switch, None)
    assert cell == "×0.31" and "[" not in cell


def test_a_pyperf_row_draws_its_interval_from_pyperfs_own_spread():
    """One repetition holding pyperf's worker processes: the interval comes from its standard
    deviation (micro's harness_spread), wider with a larger spread, and the word follows it."""
    from bench.render.drift import relative_change
    from bench.render.rows import RenderedRow
    from bench.studies import micro

    params = {"harness": "pyperf", "processes": 6, "values": 3}
    quiet = micro.harness_spread(params, {"stdev_pct": {"switch": 3.0}})["switch"]
    assert abs(quiet - 0.03 * (3.14159265 / 2) ** 0.5 / 6**0.5) < 1e-6
    assert micro.harness_spread({"harness": "lab"}, {"stdev_pct": {"switch": 3.0}}) == {}
    switch = micro.STUDY.metric("switch")

    def row(stdev_pct: float, base_pct: float, value: float = 466.0) -> RenderedRow:
        made = RenderedRow(
            Row("traps", "coroutines"), "home-made", "S",
            summarize([{"switch": value}], [switch]), summarize([{"switch": 1501.0}], [switch]),
            False, False,
        )  # fmt: skip
        made.summary.relative_error = micro.harness_spread(
            params, {"stdev_pct": {"switch": stdev_pct}}
        )
        made.baseline.relative_error = micro.harness_spread(
            params, {"stdev_pct": {"switch": base_pct}}
        )
        return made

    ratio, low, high = row(3.0, 3.0).ratio_interval(switch)
    assert low < ratio < high and abs(ratio - 466 / 1501) < 1e-9
    wide = row(30.0, 30.0).ratio_interval(switch)
    assert wide[2] - wide[1] > 5 * (high - low)
    level = row(30.0, 30.0, value=1400.0).ratio_interval(switch)
    assert level[1] < 1 < level[2]  # 7% apart with 30% spreads: the interval holds 1
    # The Interpreters section reads the same spreads: 20% off with a 1% error is a change.
    change = relative_change([1.2], [[1.0]], [1.0], [[1.0]], False, (0.01, 0.01, 0.01, 0.01))
    assert change[3] == "dearer" and change[1] is not None
    assert relative_change([1.2], [[1.0]], [1.0], [[1.0]], False)[3].startswith("no interval")


def test_a_section_measured_in_part_says_how_many_points_it_lacks(monkeypatch, tmp_path):
    """A run stopped part way (the full run takes hours, over sessions): the section says how
    many of the run's points it holds, before its tables, and how to continue."""
    from tests import tiny_workload

    monkeypatch.setattr(registry, "STUDIES", (*registry.STUDIES, tiny_workload.STUDY))
    results, reports = tmp_path / "results", tmp_path / "reports"
    console = Console(file=io.StringIO())
    code = runner.run(["tiny"], False, None, False, results, console=console,
                      where={"sleep_ms": "1"})  # fmt: skip
    assert code == 0, console.file.getvalue()
    report.render_all(results, reports)
    section = (reports / "bench.md").read_text().split("## Tiny", 1)[1].split("\n## ", 1)[0]
    said = "*Measured so far:* 1 of this run's 2 points (1 not yet: `nox -s bench` continues"
    assert said in section and section.index(said) < section.index("| traps")
    assert runner.run(["tiny"], False, None, False, results, console=console) == 0
    report.render_all(results, reports)
    assert "Measured so far" not in (reports / "bench.md").read_text()


def test_a_ratio_has_one_interval_whoever_computes_it_and_its_word_follows_the_print():
    row, base = [10.0, 11.0, 9.5, 10.2], [12.0, 12.5, 11.8, 12.1]
    first = intervals.ratio_interval(row, base)
    assert intervals.ratio_interval(list(reversed(row)), base[::-1]) == first  # any order
    assert intervals.median_interval(row) == intervals.median_interval(sorted(row))
    # An interval that prints as [0.83–1.00] holds 1 as a reader sees it: no ranking.
    assert intervals.word((0.9, 0.83, 0.9999), higher_is_better=False).startswith("can't tell")
    assert intervals.word((0.9, 0.83, 0.994), higher_is_better=False) == "cheaper"


def test_a_row_stopped_at_a_smaller_size_is_not_run_at_a_larger_one(tmp_path):
    from bench.runner import Job, stopped_below
    from bench.store import ResultStore
    from bench.studies import sleep

    workload = sleep.STUDY
    points = {p.key: p for p in workload.points(True) if p.args["mode"] == "sleepers"}
    small, large = (
        next(p for p in points.values() if p.args["tasks"] == n) for n in (100_000, 1_000_000)
    )
    row = Row("threads", "blocking")
    store = ResultStore.empty(tmp_path / "sleep.json", "sleep", "full")
    job = Job(workload, None, store, large, [row])
    assert stopped_below(job, row) is None  # nothing stored: measure it
    capped = {"error": "over", "did_not_finish_s": 600.0, "did_not_finish_kind": "cpu"}
    store.put(small, row, "s1", fingerprint(workload, row), [capped])
    stop = stopped_below(job, row)
    assert stop["stopped_at"] == ["tasks", 100_000] and stop["did_not_finish_s"] == 600.0
    summary = summarize([stop], workload.metrics)
    assert summary.status == "did not finish"
    assert summary.reason.endswith("at 100,000 tasks: not run at more")
    # Another mode at a smaller size stops nothing; nor does a result of other code.
    other = next(p for p in workload.points(True) if p.args["mode"] == "resident")
    assert stopped_below(Job(workload, None, store, other, [row]), row) is None
    store.put(small, row, "s1", "older code", [capped])
    assert stopped_below(job, row) is None
    # A stated limit stops it too, and says which.
    limit = {"error": "spawn: can't start new thread: 22,057 tasks ... pid_max 32,768"}
    store.put(small, row, "s1", fingerprint(workload, row), [limit])
    summary = summarize([stopped_below(job, row)], workload.metrics)
    assert summary.status == "limit" and "kernel refused another thread" in summary.reason


def test_a_repetition_run_while_the_machine_was_disturbed_is_measured_again():
    from bench.studies import connections, sleep
    from bench.summary import redo_reason

    quiet = {"others_cpus": 0.42, "steal_cpus": 0.009}  # the most a session alone showed
    assert redo_reason(quiet) is None
    busy = {"others_cpus": 1.02, "steal_cpus": 0.0}  # a test suite beside the bench
    assert redo_reason(busy) == "disturbed: other processes used 1.02 CPUs during it"
    stolen = {"others_cpus": 0.1, "steal_cpus": 0.25}
    assert redo_reason(stolen) == "disturbed: the hypervisor took 0.25 CPUs during it"
    stalled = {**busy, "stalled": True, "invalid": "the server waited"}
    assert redo_reason(stalled) == "the server waited"  # its workload's own reason first
    assert redo_reason({}) is None  # a record from before windows were read
    assert redo_reason({**busy, "error": "failed"}) is None  # a failure is a result
    # A size is not moved by the neighbours: those points are not measured again.
    assert not connections.STUDY.timed({"connections": 1000})
    assert not sleep.STUDY.timed({"mode": "resident", "tasks": 100_000})
    assert sleep.STUDY.timed({"mode": "sleepers", "tasks": 100_000})
    assert redo_reason(busy, timed=False) is None


def test_rows_measured_side_by_side_are_paired_by_round_so_a_slow_round_cancels():
    """Two rows whose every round moved together (the machine slow in round 2, fast in 3):
    paired, their ratio is the same in each round and its interval is that ratio; two medians
    resampled apart would call the same data uncertain."""
    slowness = [1.0, 1.6, 0.8, 1.1]
    base = {i: 10.0 * s for i, s in enumerate(slowness)}
    row = {i: 12.0 * s for i, s in enumerate(slowness)}
    paired = intervals.ratio_interval(row, base)
    assert all(abs(v - 1.2) < 1e-9 for v in paired)
    apart = intervals.ratio_interval(list(row.values()), list(base.values()))
    assert apart[2] - apart[1] > 0.5  # the same data, unpaired: from well under to well over 1
    # Rounds in common are what pairs: fewer than two, and the medians are compared instead.
    assert intervals.ratio_interval({0: 12.0, 1: 13.0}, {2: 10.0, 3: 10.5}) == (
        intervals.ratio_interval([12.0, 13.0], [10.0, 10.5])
    )


def test_a_repetitions_round_is_its_place_among_the_counted_ones():
    """A stalled repetition measured again keeps no round of its own (its redo is that
    round's); an invalid or failed one leaves its round out, so no pair is formed from it."""
    from bench.summary import by_round

    reps = [
        {"cost": 1.0},
        {"cost": 9.0, "redone": "stalled"},
        {"cost": 2.0},
        {"cost": 3.0, "peer_cpu_share": 0.999},  # the peer saturated: invalid
        {"cost": 4.0, "rate": 200},
    ]
    assert by_round(reps, "cost") == {0: 1.0, 1: 2.0, 3: 4.0}
    assert by_round(reps, "cost", rate=200) == {3: 4.0}
    summary = summarize(reps, [Metric("cost", "cost (µs)", higher_is_better=False)])
    assert summary.rounds["cost"] == {0: 1.0, 1: 2.0, 3: 4.0}


def test_no_reader_takes_a_figure_the_rows_table_refuses():
    """A median or a paired ratio is read only where the row's own table has a figure: never
    from a row with a failed repetition or fewer than half valid, never from a redone one."""
    from bench.summary import by_round, summarize, valid_values

    ok = {"server_cpu_us": 10.0, "peer_cpu_share": 0.5}
    saturated = {"server_cpu_us": 8.0, "peer_cpu_share": 0.99}
    redone = {"server_cpu_us": 99.0, "peer_cpu_share": 0.5, "redone": "disturbed"}
    metric = echo.STUDY.metric("server_cpu_us")
    for reps, figure in (
        ([ok, ok, saturated], [10.0, 10.0]),
        ([ok, saturated, saturated], []),
        ([ok, ok, {"error": "server exited 1"}], []),
        ([ok, redone, ok], [10.0, 10.0]),
    ):
        assert valid_values(reps, "server_cpu_us") == figure
        assert list(by_round(reps, "server_cpu_us").values()) == figure
        assert (summarize(reps, [metric]).status == "ok") == bool(figure)

    def pt(paced: bool, reps: list[dict]) -> dict:
        params = {"size": 1024, "connections": 100}
        if paced:
            params = {"measure": "paced", **params, "rate": headline.HEADLINE_RATE}
        rows = {k: {"session": "S", "reps": reps} for k in ("a/callbacks", "b/callbacks")}
        return {"params": params, "rows": rows, "baselines": {}}

    closed = pt(False, [ok, ok, ok])
    closed["rows"]["b/callbacks"] = {"session": "S", "reps": [saturated, saturated, ok]}
    paced = pt(True, [{"server_cpu_us": 30.0}, {"server_cpu_us": 30.0}, redone])
    paced["rows"]["c/callbacks"] = {"session": "S", "reps": [{"server_cpu_us": 20.0}] * 2}
    closed["rows"]["c/callbacks"] = {"session": "S", "reps": [ok, ok]}
    (said, _) = echo_render.fixed_against_closed({"closed": closed, "paced": paced})
    assert "over 2 rows" in said, "b has no closed-loop figure, so it is not read"
    assert "3.0× (a · callbacks: 30.0 against 10.0 µs)" in said, "the redone 99.0 is not in it"
