"""One interpreter's rows against another's, each read against its own session's controls.

A shared machine drifts between sessions, enough to move asyncio's own figure between two
sessions of the same interpreter. So no figure is compared across interpreters as it stands.
Each row is divided by its session's control level, the geometric mean of the control rows'
medians measured in that same session (echo: asyncio-protocol, uvloop-protocol and the
selectors floor; a workload that declares no controls: the asyncio row it is compared with),
and the comparison is the ratio of those relative figures. Its interval is a percentile
bootstrap that resamples every side's repetitions, the controls' too (the method of
:mod:`bench.render.intervals`): a move every row shares, the controls' included, cancels, and
the word is "no change" wherever the interval holds 1.

What cancels is not only the machine: an interpreter that made every row and every control
dearer by one factor also reads "no change". A row reads cheaper or dearer only where it moved
against its own session's controls.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence

from bench.render.intervals import RESAMPLES, bounds, normal_interval, word

ONE_REPETITION = "no interval (one repetition)"
Values = Sequence[float]
Change = tuple[float, float | None, float | None, str]  # ratio, low, high, word


def level_error(errors: Sequence[float | None]) -> float | None:
    """The relative standard error of a geometric mean of figures with these relative errors
    (None if one is unknown): √(Σ eᵢ²) / k, the errors taken as independent."""
    if not errors or None in errors:
        return None
    return math.sqrt(sum(e**2 for e in errors)) / len(errors)


def level(controls: Sequence[Values]) -> float | None:
    """The geometric mean of the controls' medians in one session (None: none measured)."""
    found = [statistics.median(values) for values in controls if values]
    found = [value for value in found if value > 0]
    if not found:
        return None
    return math.exp(sum(math.log(value) for value in found) / len(found))


def relative_change(
    new: Values,
    new_controls: Sequence[Values],
    old: Values,
    old_controls: Sequence[Values],
    higher_is_better: bool,
    seed: str,
    errors: Sequence[float | None] = (),
) -> Change | None:
    """(ratio, low, high, word) of a row's figure relative to its session's controls, new over
    old; the word is "no change" where the interval holds 1, else faster/slower (a rate) or
    cheaper/dearer (a cost). Where some side has a single repetition (pyperf's micro rows):
    with `errors`, the relative standard errors of new, new's level, old and old's level, a
    normal interval on the log scale (bench.render.intervals); without, ONE_REPETITION (low and
    high None). None where a side lacks the row or every control."""
    new_controls = [c for c in new_controls if c]
    old_controls = [c for c in old_controls if c]
    new_level, old_level = level(new_controls), level(old_controls)
    if not new or not old or not new_level or not old_level:
        return None
    ratio = (statistics.median(new) / new_level) / (statistics.median(old) / old_level)
    if min(len(values) for values in (new, old, *new_controls, *old_controls)) < 2:
        if len(errors) != 4 or None in errors:
            return ratio, None, None, ONE_REPETITION  # a bootstrap of one value has no width
        return _worded(normal_interval(ratio, errors), higher_is_better)
    rng = random.Random(seed)

    def resampled(values: Values) -> list[float]:
        return rng.choices(values, k=len(values))

    samples = []
    for _ in range(RESAMPLES):
        here = level([resampled(c) for c in new_controls])
        there = level([resampled(c) for c in old_controls])
        samples.append(
            (statistics.median(resampled(new)) / here) / (statistics.median(resampled(old)) / there)
        )
    return _worded((ratio, *bounds(samples)), higher_is_better)


def _worded(interval: tuple[float, float, float], higher_is_better: bool) -> Change:
    """The interval with its word, "no change" where it holds 1."""
    said = word(interval, higher_is_better, cost=not higher_is_better)
    return (*interval, "no change" if said == "level" else said)
