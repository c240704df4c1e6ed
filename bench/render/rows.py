"""From a stored point to the rows a table shows: summaries, same-session baselines, order.

Every section that shows a figure (the studies' tables, the glance, the scale section, the
charts) reads it from a :class:`RenderedRow`, so none shows a figure the tables do not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from bench import registry
from bench.fingerprint import fingerprint
from bench.plan import (
    BASELINE,
    Metric,
    Row,
    anchor_reasons,
    baseline_key,
    unavailable_variants,
)
from bench.render.intervals import normal_interval, ratio_interval
from bench.store import ResultStore
from bench.study import Study
from bench.summary import RowSummary, invalid, ratio, summarize

KIND_ORDER = {"reference": 1, "home-made": 2, "anchor": 3}
STYLE_ORDER = {"callbacks": 0, "generators": 1, "coroutines": 2, "blocking": 3, "native": 4}


@dataclass
class RenderedRow:
    """A stored row with its figures and its same-session baseline's figures."""

    row: Row
    kind: str  # "reference", "home-made" or "anchor"
    session: str
    summary: RowSummary
    baseline: RowSummary | None
    stale: bool
    earlier: bool  # measured in an earlier session than this point's newest
    # Every denominator the study declares, by its label ("asyncio-protocol"), each from this
    # row's own session (None: not measured there); the first is `baseline`. Empty: the
    # asyncio baseline alone, under the name BASELINE.
    bases: dict[str, RowSummary | None] = field(default_factory=dict)
    name: str = ""  # the study's name for this row, where its label would mislead
    # The control rows as measured in this row's own session, by row key (None: not measured
    # there): the study's declared controls, else the asyncio baseline in this row's style.
    # The Interpreters section reads each row against them (bench.render.drift).
    controls: dict[str, RowSummary | None] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.summary.status == "unavailable":  # no style: it speaks none here
            return self.row.variant
        return self.name or anchor_label(self.row)

    @property
    def base_name(self) -> str:
        """The name of the default denominator (asyncio-protocol for echo, else asyncio)."""
        return next(iter(self.bases), BASELINE)

    def base(self, which: str | None = None) -> RowSummary | None:
        """The named denominator's summary (default: the first), from this row's session."""
        if which is None or not self.bases:
            return self.baseline
        return self.bases.get(which)

    def ratio(self, metric: Metric, which: str | None = None) -> float | None:
        """The ratio its interval is around, or, with one repetition a side, of the two."""
        if not metric.ratio:
            return None
        if (found := self.ratio_interval(metric, which)) is not None:
            return found[0]
        base = self.base(which)
        stat = self.summary.stats.get(metric.name)
        base_stat = base.stats.get(metric.name) if base else None
        if stat is None or base_stat is None:
            return None
        return ratio(stat.median, base_stat.median)

    def ratio_interval(self, metric: Metric, which: str | None = None):
        """(ratio, low, high) from both sides' repetitions (paired by round where they share
        rounds: bench.render.intervals), within this row's session, or None."""
        base = self.base(which)
        row = self.summary.values.get(metric.name)
        other = base.values.get(metric.name) if base else None
        if not metric.ratio or not row or not other:
            return None
        paired = (
            self.summary.rounds.get(metric.name) or row,
            base.rounds.get(metric.name) or other,
        )
        found = ratio_interval(*paired)
        errors = (self.summary.relative_error.get(metric.name),
                  base.relative_error.get(metric.name))  # fmt: skip
        if found is None and len(row) == len(other) == 1 and None not in errors:
            return normal_interval(row[0] / other[0], errors)
        return found


def _kind(entry: dict) -> str:
    if "kind" in entry:
        return entry["kind"]
    return Row(entry["variant"], entry["style"], entry.get("anchor", False)).kind


def rendered_rows(
    workload: Study,
    point: dict,
    expected: tuple[Row, ...] | None = None,
    detail: Callable[[list[dict]], str] = lambda reps: "",
) -> list[RenderedRow]:
    """A point's stored rows with their summaries and same-session baselines, in table order.

    With `expected` (the rows the current points have at this point), stored rows of variants
    that are gone are left out, and expected rows with nothing stored say "not measured". A
    variant the lab has but this interpreter cannot load (curio on 3.12+, asyncio_eager on
    3.11) is not gone: its rows, measured where it loads, stay, so a table reads the same
    whichever interpreter renders it.
    """
    newest = max((entry["session"] for entry in point["rows"].values()), default="")
    elsewhere = unloadable_here() if expected is not None else frozenset()
    # The baselines' and controls' summaries, each summarized once per session it is read in
    # (every row of a session reads the same ones; echo's baselines are controls too).
    of_session = functools.cache(
        lambda key, session: _session_summary(workload, point, key, session)
    )
    rows = []
    for entry in point["rows"].values():
        row = Row(entry["variant"], entry["style"], entry.get("anchor", False))
        if expected is not None and row not in expected and row.variant not in elsewhere:
            continue
        baselines = point["baselines"].get(entry["session"], {})
        base_styles = [k.split("/", 1)[1] for k in baselines if k.split("/")[0] == BASELINE]
        summary = _summary(workload, point, entry["reps"])
        summary.detail = detail(entry["reps"])  # the study's note on a row (Rendering.detail)
        if workload.bases:
            bases = {key.split("/")[0]: of_session(key, entry["session"]) for key in workload.bases}
            first = next(iter(bases.values()))
        else:
            base_reps = baselines.get(baseline_key(row.style, base_styles))
            first = _summary(workload, point, base_reps) if base_reps else None
            bases = {}
        if workload.controls:
            controls = {key: of_session(key, entry["session"]) for key in workload.controls}
        else:
            controls = {baseline_key(row.style, base_styles): first}
        rows.append(
            RenderedRow(
                row=row,
                kind=_kind(entry),
                session=entry["session"],
                summary=summary,
                baseline=first,
                stale=fingerprint(workload, row) != entry["code"],
                earlier=entry["session"] != newest,
                bases=bases,
                name=dict(workload.row_names).get(row.key, ""),
                controls=controls,
            )
        )
    stored = {r.row for r in rows}
    for row in expected or ():
        if row not in stored:
            missing = RowSummary("not measured", "run the bench to measure it")
            rows.append(RenderedRow(row, row.kind, "", missing, None, False, False))
    rows.sort(
        key=lambda r: (
            r.row.variant != BASELINE,
            KIND_ORDER[r.kind],
            r.row.variant,
            STYLE_ORDER.get(r.row.style, 9),
        )
    )
    return rows


def _session_summary(workload: Study, point: dict, key: str, session: str):
    """The row `key`'s summary as measured in `session` at this point (None: not there): the
    copy that session kept, else the stored row if that session measured it."""
    reps = point["baselines"].get(session, {}).get(key)
    if reps is None:
        entry = point["rows"].get(key)
        reps = entry["reps"] if entry is not None and entry["session"] == session else None
    return _summary(workload, point, reps) if reps else None


def _summary(workload: Study, point: dict, reps: list[dict]) -> RowSummary:
    """A row's summary, with its harness's spread where one repetition holds the harness's
    own repeats (pyperf: :attr:`bench.study.Study.harness_spread`)."""
    summary = summarize(reps, workload.metrics)
    if summary.status == "ok" and summary.valid == 1:
        rep = next(r for r in reps if not r.get("error") and not invalid(r))
        summary.relative_error = workload.harness_spread(point["params"], rep)
    return summary


@functools.cache
def unloadable_here() -> frozenset[str]:
    """The variants and anchor servers the lab has that cannot load on this interpreter."""
    anchors = {name for name, why in anchor_reasons().items() if why}
    return frozenset(unavailable_variants()) | frozenset(anchors)


def current_points(workload: Study, mode: str) -> dict[str, tuple[Row, ...]]:
    """The rows of the study's current points, by point key ({} if it cannot be known)."""
    if workload.unavailable():
        return {}
    return {point.key: point.rows for point in workload.points(mode == "full")}


def stored_points(
    stores: dict[str, ResultStore | None], mode: str
) -> Callable[[str], list[tuple[dict, list[RenderedRow]]]]:
    """A function giving a study's stored points as (params, rendered rows), cached."""
    cache: dict[str, list[tuple[dict, list[RenderedRow]]]] = {}

    def points_of(name: str) -> list[tuple[dict, list[RenderedRow]]]:
        if name not in cache:
            store = stores.get(name)
            found = []
            if store is not None and name in registry.names():
                workload = registry.get(name)
                current = current_points(workload, mode)
                for point_key, point in store.data["points"].items():
                    rows = rendered_rows(workload, point, current.get(point_key))
                    found.append((point["params"], rows))
            cache[name] = found
        return cache[name]

    return points_of


def anchor_label(row: Row) -> str:
    """How a report names a row: an anchor server by its name, a variant by its style too."""
    return f"{row.variant} (anchor)" if row.anchor else row.label
