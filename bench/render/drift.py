"""One interpreter's rows against another's, each read against its own session's controls.

A shared machine drifts between sessions, enough to move asyncio's own figure between two
sessions of the same interpreter. So no figure is compared across interpreters as it stands.
Each row is divided by its session's control level, the geometric mean of the control rows'
medians measured in that same session (echo: asyncio-protocol, uvloop-protocol and the
selectors floor; a workload that declares no controls: the asyncio row it is compared with),
and the comparison is the ratio of those relative figures, on the log scale: the row's mean log
less its controls' in each session, new less old, with the t-interval of
:func:`bench.uncertainty.contrast` (every side's repetitions, the controls' too): a move every
row shares, the controls' included, cancels, and the word is what the interval says (cheaper,
dearer, within ±5%, can't tell).

What cancels is not only the machine: an interpreter that made every row and every control
dearer by one factor also reads "no change". A row reads cheaper or dearer only where it moved
against its own session's controls.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from bench import uncertainty
from bench.render.intervals import normal_interval, word

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
    errors: Sequence[float | None] = (),
) -> Change | None:
    """(ratio, low, high, word) of a row's figure relative to its session's controls, new over
    old (:func:`bench.uncertainty.contrast`); the word is faster/slower (a rate) or
    cheaper/dearer (a cost) where the interval excludes 1, else within ±5% or can't tell.
    Where some side has a single repetition (pyperf's micro rows): with `errors`, the relative
    standard errors of new, new's level, old and old's level, a normal interval on the log
    scale (bench.render.intervals); without, ONE_REPETITION (low and high None). None where a
    side lacks the row or every control."""
    new_controls = [c for c in new_controls if c]
    old_controls = [c for c in old_controls if c]
    new_level, old_level = level(new_controls), level(old_controls)
    if not new or not old or not new_level or not old_level:
        return None
    if min(len(values) for values in (new, old, *new_controls, *old_controls)) < 2:
        ratio = (statistics.median(new) / new_level) / (statistics.median(old) / old_level)
        if len(errors) != 4 or None in errors:
            return ratio, None, None, ONE_REPETITION  # one value has no spread to read
        return _worded(normal_interval(ratio, errors), higher_is_better)
    groups = [(new, 1.0), (old, -1.0)]
    groups += [(c, -1 / len(new_controls)) for c in new_controls]
    groups += [(c, 1 / len(old_controls)) for c in old_controls]
    found = uncertainty.contrast(groups)
    return _worded((found.value, found.low, found.high), higher_is_better)


def _worded(interval: tuple[float, float, float], higher_is_better: bool) -> Change:
    """The interval with its word."""
    return (*interval, word(interval, higher_is_better))
