"""Intervals from repetitions: a ratio's, a median's, and how a comparison is worded from it.

One method for every ratio on every page (bench.md's verdict and tables, the HTML site):
:mod:`bench.uncertainty`'s t-interval on the mean log ratio, paired by round where two rows
share two rounds or more (the geometric mean of the per-round ratios), else the two sides'
geometric means with their variance pooled; deterministic, and computed once per inputs per
render, so a ratio prints one interval on every page. A comparison is worded from the interval
as printed: cheaper or dearer (faster or slower) where it excludes 1, within ±5% where it lies
inside that margin, can't tell otherwise. A single repetition a side gets a normal interval from
a harness's own spread (pyperf's, ``Study.harness_spread``) or none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from bench import uncertainty

CONFIDENCE = uncertainty.CONFIDENCE  # what every interval on the pages declares
MARGIN = uncertainty.MARGIN  # "within ±M%"


def median_interval(values: list[float]) -> tuple[float, float]:
    """The interval of the median of values from order statistics (bench.uncertainty): at
    least 95% from six values up, the range below that (its coverage: median_coverage)."""
    low, high, _ = uncertainty.median_interval(values)
    return low, high


def median_coverage(n: int) -> float:
    """What a median's interval from n values really covers."""
    return uncertainty.median_interval(list(range(n)))[2]


# The fewest values whose median's interval reaches CONFIDENCE (below, it is their range).
MEDIAN_FULL = next(n for n in range(2, 100) if median_coverage(n) >= CONFIDENCE)


# A page set prints the same ratio on several pages (bench.md, the full page, the site): each is
# computed once, keyed by its inputs as given, so the cache cannot change a figure.
_RATIOS: dict[str, tuple[float, float, float] | None] = {}


def ratio_interval(
    row: Sequence[float] | Mapping[int, float], base: Sequence[float] | Mapping[int, float]
) -> tuple[float, float, float] | None:
    """(ratio, low, high) of row over base, computed once per inputs (see _ratio_interval)."""
    key = repr((_plain(row), _plain(base)))
    if key not in _RATIOS:
        _RATIOS[key] = _ratio_interval(row, base)
    return _RATIOS[key]


def _plain(side: object) -> object:
    return ("by round", sorted(side.items())) if isinstance(side, Mapping) else list(side)


def _ratio_interval(
    row: Sequence[float] | Mapping[int, float], base: Sequence[float] | Mapping[int, float]
) -> tuple[float, float, float] | None:
    """(ratio, low, high) of row over base: paired by round where both are values by round
    (bench.summary.by_round) with two rounds or more in common, else unpaired. None where a
    side has a single value, which gives no spread to make an interval from."""
    if isinstance(row, Mapping) and isinstance(base, Mapping):
        common = [r for r in sorted(row.keys() & base.keys()) if row[r] > 0 and base[r] > 0]
        if len(common) >= 2:
            found = uncertainty.paired([row[r] for r in common], [base[r] for r in common])
            return (found.value, found.low, found.high) if found else None
    positive = [[v for v in _values(side) if v > 0] for side in (row, base)]
    found = uncertainty.unpaired(*positive)
    return (found.value, found.low, found.high) if found else None


def _values(side: Sequence[float] | Mapping[int, float]) -> Sequence[float]:
    return side.values() if isinstance(side, Mapping) else side


def normal_interval(ratio: float, relative_errors) -> tuple[float, float, float]:
    """A ratio of figures each known with a relative standard error (a harness's own repeats,
    as pyperf's), and its 95% interval under a normal approximation on the log scale, the
    errors taken as independent: ratio × exp(±1.96 √(Σ eᵢ²))."""
    half = 1.96 * math.sqrt(sum(e**2 for e in relative_errors))
    return ratio, ratio * math.exp(-half), ratio * math.exp(half)


def word(ratio: tuple[float, float, float], higher_is_better: bool = False) -> str:
    """What the interval says (bench.uncertainty.word: judged as printed)."""
    return uncertainty.word(uncertainty.Ratio(*ratio, n=0), higher_is_better)


def worded(
    ratio: tuple[float, float, float], higher_is_better: bool = False, brief: bool = False
) -> str:
    """×r [low–high], and what the interval says (brief: its kind alone, for a list where the
    interval beside it shows its width)."""
    value, low, high = ratio
    said = word(ratio, higher_is_better)
    return f"×{value:.2f} [{low:.2f}–{high:.2f}], {kind(said) if brief else said}"


# What an interval can say, as a page counts them: a word's kind is its first words.
WITHIN = f"within ±{MARGIN:.0%}"
KINDS = ("cheaper", "faster", WITHIN, "can't tell", "dearer", "slower")


def kind(said: str) -> str:
    """The kind of a word ("can't tell (a difference under 12% ...)" is "can't tell")."""
    return said.split(" (")[0]
