"""Intervals from repetitions: a median's, a ratio's, and how a comparison is worded from it.

One method for every page that shows one (bench.md's verdict, the HTML site's tables): a
percentile bootstrap over the stored repetitions, seeded by the values themselves, so that a re-
render writes the same bytes and a ratio prints one interval on every page. A comparison is
worded from the ratio's interval as printed: "level" when it holds 1.00, otherwise better or
worse in the figure's own direction (cheaper/dearer for a cost, faster/slower for a rate). With
three repetitions a side the interval is close to the repetitions' range: wide, and honest about
it.

A row stored as one repetition has nothing to resample. Where that repetition holds a harness's
own repeats (pyperf's worker processes), the workload gives each figure's relative standard
error (``Workload.harness_spread``) and the ratio's interval is a normal approximation from it;
otherwise a single value gets no interval and no word.
"""

from __future__ import annotations

import math
import random
import statistics

RESAMPLES = 400
CONFIDENCE = 0.95
_TAIL = (1 - CONFIDENCE) / 2


def bounds(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[int(_TAIL * RESAMPLES)], ordered[int((1 - _TAIL) * RESAMPLES) - 1]


def _seeded(*sides: list[float]) -> tuple[random.Random, list[list[float]]]:
    """A generator seeded by the values themselves, and the values in one order: the same
    figures give the same interval on every page that prints them, whoever computes it."""
    ordered = [sorted(side) for side in sides]
    return random.Random(repr(ordered)), ordered


def median_interval(values: list[float]) -> tuple[float, float]:
    """The bootstrap interval of the median of values."""
    if len(values) < 2:
        return values[0], values[0]
    rng, (values,) = _seeded(values)
    return bounds([statistics.median(rng.choices(values, k=len(values))) for _ in range(RESAMPLES)])


def ratio_interval(row: list[float], base: list[float]) -> tuple[float, float, float] | None:
    """The ratio of two medians and its bootstrap interval (each side resampled); None where
    a side has a single value (pyperf's micro rows store one mean per row), whose bootstrap
    would be a zero-width interval that calls any difference certain."""
    if len(row) < 2 or len(base) < 2:
        return None
    rng, (row, base) = _seeded(row, base)
    low, high = bounds(
        [
            statistics.median(rng.choices(row, k=len(row)))
            / statistics.median(rng.choices(base, k=len(base)))
            for _ in range(RESAMPLES)
        ]
    )
    return statistics.median(row) / statistics.median(base), low, high


def normal_interval(ratio: float, relative_errors) -> tuple[float, float, float]:
    """A ratio of figures each known with a relative standard error (a harness's own repeats,
    as pyperf's), and its 95% interval under a normal approximation on the log scale, the
    errors taken as independent: ratio × exp(±1.96 √(Σ eᵢ²))."""
    half = 1.96 * math.sqrt(sum(e**2 for e in relative_errors))
    return ratio, ratio * math.exp(-half), ratio * math.exp(half)


def word(ratio: tuple[float, float, float], higher_is_better: bool, cost: bool = True) -> str:
    """level (the interval holds 1), or better/worse in the figure's direction."""
    _, low, high = ratio
    if round(low, 2) <= 1 <= round(high, 2):  # as printed: [0.83–1.00] is level, not cheaper
        return "level"
    better = (low > 1) == higher_is_better
    if cost:
        return "cheaper" if better else "dearer"
    return "faster" if better else "slower"


def worded(ratio: tuple[float, float, float], higher_is_better: bool = False) -> str:
    """×r [low–high], and what the interval says."""
    value, low, high = ratio
    said = word(ratio, higher_is_better, cost=not higher_is_better)
    said = "level (the interval holds 1)" if said == "level" else said
    return f"×{value:.2f} [{low:.2f}–{high:.2f}], {said}"
