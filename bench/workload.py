"""The workload protocol: everything the bench asks of a workload, each hook named once.

A workload is declared, not probed. Its module in :mod:`bench.registry` builds one
:class:`Workload` and the registry (``bench/studies/__init__.py``) lists it; from there the
runner measures it, the store keeps it and the report renders it, with no other edit (as
discovery does for a loop variant). Every hook below is typed and documented here, with its
default here: a workload states only what differs, and no caller asks "does it have this?".

Why two halves. :class:`Workload` is what the report needs (points, figures, titles, the prose
written from the data) and never imports the running code; :class:`Measuring` is what only
``python -m bench run`` needs (one repetition, a point's settings, the peers kept across
points). The registration names its running module by name (:attr:`Workload.running`), and
the runner imports that module's ``MEASURING``: the arrows go one way, from the running side
to the declaration, never back. So ``python -m bench report`` loads neither the runner nor
the process machinery, and the running module's code is part of every row's fingerprint
(:func:`bench.store.row_fingerprint`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.plan import Chart, Glance, Metric, Point, Row
from bench.store import ResultStore, row_fingerprint

if TYPE_CHECKING:  # the running side's types, named for readers and checkers only
    from bench.procs import Cores


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
class Workload:
    """One workload of the bench: what it measures, at which points, and how it reads."""

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
    # Its columns in the at-a-glance table opening each report (bench.render.glance).
    glance: tuple[Glance, ...] = ()
    # The figures a point's table shows, its headline first. Default (None): the headline,
    # then every other metric in order.
    columns: Callable[[dict], list[Metric]] | None = None
    # A chart panel's title, for a Chart with panels: panel_title(parameter, value).
    panel_title: Callable[[str, object], str] = _panel_title
    # Why this workload cannot run in this tree (None: it can). An unavailable workload is
    # skipped by the run and has no current points in the report.
    unavailable: Callable[[], str | None] = _nothing
    # The header of an extra column of per-row notes at a point (None: no such column), and
    # the note of a row from its repetitions (echo: which load generator measured it).
    detail_column: Callable[[dict], str | None] = _nothing
    detail: Callable[[list[dict]], str] = _no_detail
    # Paragraphs above a point's table: point_notes(params, stored points by key).
    point_notes: Callable[[dict, dict], list[str]] = _no_lines
    # Sentences the workload adds to a table's "What this shows", from its rendered rows:
    # observations(params, rows).
    observations: Callable[[dict, list], list[str]] = _no_lines
    # Markdown lines after the section's tables, reading across its points:
    # section_end(stored points by key, in table order).
    section_end: Callable[[dict], list[str]] = _no_lines
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
    # Another workload whose servers and peers its rows run, as (its workloads/ folder, its
    # running module): their code is part of its rows' fingerprints too (latency runs echo's).
    runs_on: tuple[str, str] | None = None
    # A ladder: the parameter its rows climb point by point (latency: the offered rate), and
    # why a stored step ends a row's climb (None: it goes on). A row is not measured at a
    # larger value once its climb ended at a smaller one (bench.runner.stopped_below).
    climbs: str | None = None
    climb_ends: Callable[[list[dict]], str | None] = _nothing
    # The rendering module whose section(workload, stored, mode, chart_dir, out) writes its
    # report section instead of a table per point (None: a table per point). An empty
    # section is left out of the page and its index (latency: only where curves are stored).
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

    def fingerprint(self, row: Row) -> str:
        """The code fingerprint of one of its rows: what marks a stored row stale."""
        own = row_fingerprint(self.name, self.running, row)
        if self.runs_on is None:
            return own
        theirs = row_fingerprint(*self.runs_on, row)
        return hashlib.sha256(f"{own} {theirs}".encode()).hexdigest()[:16]

    def metric(self, name: str) -> Metric:
        """The declared figure of that name."""
        return next(m for m in self.metrics if m.name == name)
