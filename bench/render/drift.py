"""One interpreter's rows against another's, each read against its own session's controls.

Each interpreter is measured in its own session, and a shared machine drifts between sessions:
asyncio's own figure moved 17% between two sessions of the same interpreter (issue 36). So no
figure is compared across interpreters as it stands. Each row's repetitions are divided by its
session's control level, the geometric mean of the control rows' medians measured in that same
session (echo: asyncio-protocol, uvloop-protocol and the selectors floor), and the comparison
is the ratio of those relative figures, with a bootstrap interval over both sides' repetitions
(:mod:`bench.render.intervals`): a rise every row shares, controls included, cancels, and the
word is "no change" wherever the interval holds 1. The controls' own spread is not resampled:
the interval is of the rows' repetitions only.
"""

from __future__ import annotations

import math
import statistics

from bench.render.intervals import ratio_interval, word

CONTROLS = ("asyncio-protocol/native", "uvloop-protocol/native", "selectors-floor/native")


def control_level(rows: dict[str, list[float]], controls=CONTROLS) -> float | None:
    """The geometric mean of the controls' medians in one session (None: none measured)."""
    found = [statistics.median(rows[key]) for key in controls if rows.get(key)]
    found = [value for value in found if value > 0]
    if not found:
        return None
    return math.exp(sum(math.log(value) for value in found) / len(found))


def compare(
    reference: dict[str, list[float]],
    other: dict[str, list[float]],
    higher_is_better: bool,
    controls=CONTROLS,
) -> dict[str, tuple[float, float, float, str]]:
    """Per row measured on both: (ratio, low, high, word) of its figure relative to its own
    session's controls, other over reference; the word is "no change" where the interval
    holds 1, else faster/slower (a rate) or cheaper/dearer (a cost). {} without controls."""
    base, level = control_level(reference, controls), control_level(other, controls)
    if base is None or level is None:
        return {}
    found = {}
    for key in sorted(reference.keys() & other.keys()):
        if key in controls or not reference[key] or not other[key]:
            continue
        ratio = ratio_interval(
            [v / level for v in other[key]], [v / base for v in reference[key]], f"drift:{key}"
        )
        said = word(ratio, higher_is_better, cost=not higher_is_better)
        found[key] = (*ratio, "no change" if said == "level" else said)
    return found
