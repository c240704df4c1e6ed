"""Intervals from repetitions: a median's, a ratio's, and how a comparison is worded from it.

One method for every page that shows one (bench.md's verdict, the HTML site's tables): a
percentile bootstrap, seeded by the values themselves, so a re-render writes the same bytes and
a ratio prints one interval on every page. Two rows measured side by side are paired by round:
the ratio is the median of the per-round ratios, resampled by round, so what the machine did to
both rows in a round cancels; rows without rounds in common get the ratio of two medians, each
side resampled. A comparison is worded from the interval as printed: "level" when it holds
1.00, otherwise better or worse in the figure's own direction. A single repetition a side gets
a normal interval from a harness's own spread (pyperf's, ``Study.harness_spread``) or none.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence

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


# A page set prints the same ratio on several pages (bench.md, the full page, the site): each is
# resampled once, keyed by its inputs as given, so the cache cannot change a figure.
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
    """(ratio, low, high) of row over base. Given values by round (bench.summary.by_round) with
    two rounds or more in common, paired: the median of the per-round ratios, the rounds
    resampled. Otherwise the ratio of two medians, each side resampled. None where a side has
    a single value, whose bootstrap would be a zero-width interval that calls any difference
    certain."""
    if (ratios := per_round(row, base)) is not None:
        return _paired(ratios)
    row, base = list(_values(row)), list(_values(base))
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


def per_round(row: object, base: object) -> list[float] | None:
    """Each shared round's ratio, where both sides are values by round and share two rounds
    or more (what a paired ratio is the median of); else None."""
    if not (isinstance(row, Mapping) and isinstance(base, Mapping)):
        return None
    common = [r for r in sorted(row.keys() & base.keys()) if base[r]]
    return [row[r] / base[r] for r in common] if len(common) >= 2 else None


def _values(side: Sequence[float] | Mapping[int, float]) -> Sequence[float]:
    return side.values() if isinstance(side, Mapping) else side


def _paired(ratios: list[float]) -> tuple[float, float, float]:
    rng, (ratios,) = _seeded(ratios)
    resampled = [statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(RESAMPLES)]
    return (statistics.median(ratios), *bounds(resampled))


def widened(
    ratio: tuple[float, float, float] | None, between: dict | None
) -> tuple[float, float, float] | None:
    """ratio's interval with the spread between sessions added, where a point stores one.

    A session's interval holds what moved within it; a second session's ratio also moves by what the
    machine does between sessions (bench.studies.reproductions.measure measures it: ``between``
    holds the root mean square of the log ratio's move from one session to another). Each side of
    the interval grows, on the log scale, by 1.96 times that spread, in quadrature with its own
    half-width."""
    if ratio is None or not between or not between.get("spread"):
        return ratio
    value, low, high = ratio
    z = 1.96 * between["spread"]
    return (
        value,
        value * math.exp(-math.hypot(math.log(value / low), z)),
        value * math.exp(math.hypot(math.log(high / value), z)),
    )


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
