"""The study protocol: everything the bench asks of a study, each hook named once.

A study is a folder, ``bench/studies/<name>/``: its declaration (the package, data only), its
running side and its rendering side, each named in the declaration by module and loaded by
name (the runner loads :attr:`Study.running`'s ``MEASURING``, the page
:attr:`Study.rendering`'s ``RENDERING``), so the arrows go one way: from each side to the
declaration, never back. ``bench/README.md`` maps the core; the hooks are documented here,
each with its default, so a study states only what differs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.plan import Chart, Glance, Metric, Point, Row

if TYPE_CHECKING:  # the running and the page's types, named for readers and checkers only
    from bench.procs import Cores
    from bench.render.page import Page
    from bench.store import ResultStore


def _nothing(*args: Any) -> None:
    return None


def _no_lines(*args: Any) -> list[str]:
    return []


def _no_spread(params: dict, rep: dict) -> dict[str, float]:
    return {}


def _no_detail(reps: list[dict]) -> str:
    return ""


def _always(params: dict) -> bool:
    return True


def _panel_title(parameter: str, value: object) -> str:
    return f"{parameter} {value}"


@dataclass(frozen=True)
class Measuring:
    """The running side of a workload: how one repetition is measured."""

    # One repetition of one row at one point, in a fresh temporary directory: the record to
    # store (figures by Metric.name, plus anything the rendering hooks read back). Raise
    # bench.procs.ChildFailed (a failed row) or DidNotFinish (over the point's cap).
    measure: Callable[[Point, Row, Cores, Path, bool], dict]
    # Before a point's rows are measured: settle its settings from stored data. Default:
    # nothing to settle (echo's offered rates are declared, parameters of its points).
    prepare: Callable[[Point, ResultStore], None] = _nothing
    # After the whole run, even an interrupted one: stop peers kept across points (the
    # crawler's site server). Default: nothing kept.
    finish: Callable[[], None] = _nothing


@dataclass(frozen=True)
class Rendering:
    """The rendering side of a study: what it adds to the page from its stored data."""

    # The header of an extra column of per-row notes at a point (None: no such column), and
    # the note of a row from its repetitions (echo: which load generator measured it).
    detail_column: Callable[[dict], str | None] = _nothing
    detail: Callable[[list[dict]], str] = _no_detail
    # Paragraphs above a point's table: point_notes(params, stored points by key).
    point_notes: Callable[[dict, dict], list[str]] = _no_lines
    # Sentences the study adds to a table's "What this shows", from its rendered rows:
    # observations(params, rows).
    observations: Callable[[dict, list], list[str]] = _no_lines
    # Markdown lines after the section's tables, reading across its points:
    # section_end(stored points by key, in table order, the store's sessions by name: where a
    # table of its own says where its rows ran).
    section_end: Callable[[dict, dict], list[str]] = _no_lines
    # Its own section instead of a table per point: section(study, page) -> markdown lines,
    # [] to be left off the page and its index (latency: only where curves are stored). A
    # side study's is how it adds to the page (the cost anatomy's tables under its heading).
    section: Callable[[Any, Page], list[str]] | None = None


@dataclass(frozen=True)
class Option:
    """An option of ``python -m bench run`` that a side study reads: argparse's flags and
    keywords, as data."""

    flags: tuple[str, ...]
    settings: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class SideStudy:
    """A study measured row by row outside the run's walk over points (the cost anatomy, the
    instruction counts, the reproductions): ``python -m bench run --study NAME`` calls its
    running module's ``main(args)``, and the page reads its ``RENDERING.section``."""

    name: str
    title: str
    # The dotted name of the module whose main(args) -> int measures it (run's parsed options).
    measuring: str
    rendering: str  # the dotted name of the module whose RENDERING adds it to the page
    options: tuple[Option, ...] = ()  # the options of ``run`` it reads, beyond --loop
    # What a run stopped by Ctrl-C keeps, said to the user.
    kept_if_stopped: str = "what finished is stored"


@dataclass(frozen=True)
class Study:
    """One study of the bench: what it measures, at which points, and how it reads."""

    name: str  # its results are <results>/<mode>/<name>.json, its charts <mode>-<name>-*.png
    title: str  # the report section's heading (and its anchor, lower-cased)
    description: str  # the section's opening paragraph
    metrics: tuple[Metric, ...]  # every figure a repetition records, in table order
    headline: str  # the Metric.name a table leads with (unless columns says otherwise)
    # points(full): the quick or the full run's points, in measuring order
    points: Callable[[bool], list[Point]]
    point_title: Callable[[dict], str]  # a point's table heading, from its parameters
    # The running side: the dotted name of the module whose MEASURING (a Measuring) the
    # runner imports; rendering never imports it.
    running: str
    charts: tuple[Chart, ...] = ()  # drawn under the section (bench.render.charts)
    # Its columns in the at-a-glance table opening each report (bench.pages.glance).
    glance: tuple[Glance, ...] = ()
    # The figures a point's table shows, its headline first. Default (None): the headline,
    # then every other metric in order.
    columns: Callable[[dict], list[Metric]] | None = None
    # A chart panel's title, for a Chart with panels: panel_title(parameter, value).
    panel_title: Callable[[str, object], str] = _panel_title
    # Why this study cannot run in this tree (None: it can). An unavailable study is
    # skipped by the run and has no current points in the report.
    unavailable: Callable[[], str | None] = _nothing
    # Its bases: the rows every ratio is taken against, by row key, first the default (echo: the
    # servers users write, asyncio-protocol then uvloop-protocol), each read from the compared
    # row's own session only. Empty: the baseline, asyncio's row in the same style
    # (bench.plan.baseline_key).
    bases: tuple[str, ...] = ()
    # Control rows whose per-session figures the store keeps (with the baselines), so a session
    # whose controls moved beyond their stored spread is flagged on the page.
    controls: tuple[str, ...] = ()
    # For a row measured in one repetition whose harness repeats inside it (pyperf): each
    # figure's relative standard error, from the point's parameters and that repetition
    # (harness_spread(params, rep)), so that its ratio still carries an interval.
    harness_spread: Callable[[dict, dict], dict[str, float]] = _no_spread
    # Whether a point's figures are times, which the machine's neighbours move (a repetition
    # measured while the machine was disturbed is then measured again), or counts and sizes,
    # which they do not: timed(params). Default: times.
    timed: Callable[[dict], bool] = _always
    # How a table names a row, where its plain label would mislead, by row key.
    row_names: tuple[tuple[str, str], ...] = ()
    # Another study whose servers and peers its rows run, as (its workloads/ folder, its
    # running module): their code is part of its rows' fingerprints too (latency runs echo's).
    runs_on: tuple[str, str] | None = None
    # A ladder: the parameter its rows climb point by point (latency: the offered rate), and
    # why a stored step ends a row's climb (None: it goes on). A row is not measured at a
    # larger value once its climb ended at a smaller one (bench.runner.stopped_below).
    climbs: str | None = None
    climb_ends: Callable[[list[dict]], str | None] = _nothing
    # The rendering side: the dotted name of the module whose RENDERING (a Rendering) the page
    # reads; None: the default Rendering, a table per point and nothing added.
    rendering: str | None = None

    def columns_at(self, params: dict) -> list[Metric]:
        """The figures shown at a point, its headline first."""
        if self.columns is not None:
            return list(self.columns(params))
        headline = self.metric(self.headline)
        return [headline, *(m for m in self.metrics if m is not headline)]

    @property
    def kept(self) -> frozenset[str]:
        """The rows whose per-session figures its store keeps: its bases and controls."""
        return frozenset(self.bases) | frozenset(self.controls)

    def metric(self, name: str) -> Metric:
        """The declared figure of that name."""
        return next(m for m in self.metrics if m.name == name)
