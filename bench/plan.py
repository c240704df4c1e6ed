"""The bench's vocabulary: a point (one configuration of a workload), its rows, its figures.

A *point* is one set of workload parameters (say echo with 1 KiB messages over 100
connections). Its *rows* are what is compared at that point: every discovered variant in
every style it speaks, plus, for echo, the anchor servers a user would pick instead. Rows are
never listed by hand: they come from :func:`loops.discover`, so a new variant folder shows up
in the bench and its report without an edit here.

Every figure is also given as a ratio to rows measured in the same session at the same point:
to the workload's bases where it declares them (echo's: asyncio-protocol, then
uvloop-protocol), otherwise to the baseline, asyncio: its row in the same style where asyncio
speaks it (the same program on another loop), else its coroutines row.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass, field

import loops
from workloads.echo import native

# The names the bench's figures are read against, each declared here and imported where used
# (bench/README.md, "Words", says what each means).
# The baseline: a workload that declares no bases of its own (every one but echo) divides each
# row by this variant's row in the same style, measured in the same session.
BASELINE = "asyncio"
BASELINE_FALLBACK_STYLE = "coroutines"  # its row for a style it does not speak
USER_BASE = "asyncio-protocol"  # the echo server an asyncio user writes: echo's first base
YARDSTICK = "uvloop-protocol"  # the same server on uvloop: echo's second base, the anatomy's
FLOOR = "selectors-floor"  # the echo anchor with no design: a bare selectors loop
# The echo servers an asyncio user writes instead of any loop here: what the glance compares
# each design's cost against (asyncio · coroutines is the lab's contract over sock_recv).
USER_SERVERS = ("asyncio-streams", USER_BASE, YARDSTICK)
# The reading path's files in loops/: read, never run by a measurement (no loop imports them),
# so they count in no row's fingerprint and in no loop's code size.
READING_ONLY = frozenset({"why_a_loop.py", "primer.py", "essence.py"})


@dataclass(frozen=True)
class Row:
    """One thing measured at a point: a variant in one style, or an anchor server."""

    variant: str
    style: str  # a loops.STYLES name, or "native" for an anchor
    anchor: bool = False

    @property
    def key(self) -> str:
        return f"{self.variant}/{self.style}"

    @property
    def label(self) -> str:
        return f"{self.variant} · {self.style}"

    @property
    def kind(self) -> str:
        """ "anchor", "reference" (an adapter of a production loop) or "home-made"."""
        if self.anchor:
            return "anchor"
        try:
            return "reference" if loops.get(self.variant).reference else "home-made"
        except LookupError:
            return "home-made"


@dataclass(frozen=True)
class Metric:
    """One figure a workload reports, and how to read it."""

    name: str  # the key in a repetition's record
    label: str  # the table header, unit included
    higher_is_better: bool
    digits: int = 0  # decimals shown
    scale: float = 1.0  # multiply stored value by this for display (e.g. s -> ms)
    ratio: bool = True  # False for figures a ratio to asyncio says nothing about

    @property
    def short(self) -> str:
        """The label without its unit."""
        return self.label.split(" (")[0]


@dataclass(frozen=True)
class Chart:
    """A line chart of one figure against one parameter, a panel per value of another."""

    name: str  # the file is reports/charts/<mode>-<workload>-<name>.png
    metric: str
    x: str  # the parameter on the x axis
    title: str
    x_label: str
    panels: str | None = None  # the parameter whose values get a panel each
    where: tuple[tuple[str, object], ...] = ()  # only points with these parameter values
    log_x: bool = True
    log_y: bool = False


@dataclass(frozen=True)
class Glance:
    """A column of the at-a-glance table opening each report: one of a workload's figures at
    one of its points (its digits, scale and better direction are the Metric's)."""

    header: str
    where: tuple[tuple[str, object], ...]  # the point: these parameter values (None: absent)
    metric: str  # a Metric.name of the workload
    noun: str  # for the sentence under the table: "requests/s", "ns per switch"
    point_text: str  # for the sentence: "1 KiB × 100 connections"
    per_loop: bool = False  # one figure per loop, shown in each of its style rows (http)
    place: int = 100  # where the column stands, left to right (a tie keeps report order)


@dataclass(frozen=True)
class Point:
    """One configuration of a workload and the rows compared at it."""

    workload: str
    params: tuple[tuple[str, object], ...]
    rows: tuple[Row, ...] = field(compare=False)
    repetitions: int = 3  # at most this many repetitions per row
    # At least this many; a row stops there when its spread allows (bench.summary.complete).
    # None: always `repetitions`.
    min_repetitions: int | None = field(default=None, compare=False)
    # Seconds one repetition of one row may take; past it the row is stored as "did not
    # finish in N s", a result of its own (None: the workload's own generous timeout).
    cap_s: float | None = field(default=None, compare=False)
    # Where the first screen reads its ratios (echo's headline points), the key rows get more
    # rounds than the rest: their intervals are what a reader acts on (None: as every row).
    key_repetitions: int | None = field(default=None, compare=False)

    def rounds(self, row: Row) -> int:
        """How many repetitions this point runs of one row, at most."""
        return self.key_repetitions if self.key_repetitions and key_row(row) else self.repetitions

    @property
    def key(self) -> str:
        return ",".join(f"{name}={value}" for name, value in self.params) or "default"

    @property
    def args(self) -> dict[str, object]:
        return dict(self.params)


def key_row(row: Row) -> bool:
    """The rows the first screen's ratios are read from or against: the anchors (the controls
    among them) and the home-made loops, not the production loops' adapters."""
    return row.kind != "reference"


def variant_rows(styles: Iterable[str] | None = None) -> list[Row]:
    """Every discovered variant in every style it speaks (limited to `styles` if given)."""
    wanted = set(styles) if styles is not None else set(loops.STYLES)
    return [
        Row(variant.name, style)
        for variant in loops.discover().values()
        for style in variant.styles
        if style in wanted
    ]


def unavailable_variants() -> dict[str, str]:
    """Variants discovered but unable to run on this interpreter, by name, each with the
    sentence every report shows in place of its rows ("unavailable on Python 3.12: ...")."""
    return {
        variant.name: f"unavailable on Python {loops.PYTHON}: {variant.unavailable}"
        for variant in loops.discover().values()
        if not variant.available
    }


def anchor_names() -> list[str]:
    """The anchor servers whose library loads here (curio's does not on Python 3.12+)."""
    return [name for name, why in anchor_reasons().items() if why is None]


def anchor_reasons() -> dict[str, str | None]:
    """Every anchor server, with why it cannot run here (None: it can)."""
    return {name: native.unavailable(name) for name in native.SERVERS}


def implemented_styles(package: str) -> list[str]:
    """The styles a workload package is written in: one module per style."""
    return [s for s in loops.STYLES if importlib.util.find_spec(f"{package}.{s}") is not None]


def baseline_key(row_style: str, baseline_styles: Iterable[str]) -> str:
    """The row key of the asyncio row a row with `row_style` is compared against."""
    style = row_style if row_style in set(baseline_styles) else BASELINE_FALLBACK_STYLE
    return Row(BASELINE, style).key


def narrow(rows: Iterable[Row], loop_names: Iterable[str] | None) -> list[Row]:
    """Rows of the named loops (and anchors named so), always keeping the asyncio baseline."""
    rows = list(rows)
    if not loop_names:
        return rows
    names = set(loop_names)
    return [row for row in rows if row.variant in names or row.variant == BASELINE]
