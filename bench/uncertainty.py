"""One estimator and one interval for a ratio of two rows: a t-interval on the mean log ratio.

The bench's noise belongs to each fresh server process, is near log-normal and has one-sided
outliers (interference only adds time), so a ratio is estimated on the log scale: the geometric
mean of the per-round ratios (paired) or of the two sides (unpaired, variance pooled), with
Student's t for the few rounds the bench runs. Deterministic: the same figures give the same
interval on every page. Pooled across sessions, each session's mean log ratio is one observation
(random effects), so more sessions make the interval tighter. tests/test_uncertainty.py
simulates the bench's noise and holds the declared 95% between 93% and 97% at every n the bench
uses.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
MARGIN = 0.05  # "within ±5%": the difference the lab declares too small to matter

# Student's t, two-sided 95% (the 0.975 quantile), by degrees of freedom; beyond the table the
# Cornish-Fisher expansion below is within 1e-4 of it.
_T975 = {
    1: 12.7062, 2: 4.3027, 3: 3.1824, 4: 2.7764, 5: 2.5706, 6: 2.4469, 7: 2.3646, 8: 2.3060,
    9: 2.2622, 10: 2.2281, 11: 2.2010, 12: 2.1788, 13: 2.1604, 14: 2.1448, 15: 2.1314,
    16: 2.1199, 17: 2.1098, 18: 2.1009, 19: 2.0930, 20: 2.0860, 25: 2.0595, 30: 2.0423,
}  # fmt: skip
_Z975 = 1.959964


def t975(df: float) -> float:
    """The 0.975 quantile of Student's t with df degrees of freedom."""
    if df < 1:
        raise ValueError(f"a t-interval needs at least one degree of freedom, got {df}")
    if df == int(df) and int(df) in _T975:
        return _T975[int(df)]
    z = _Z975  # Cornish-Fisher: within 1e-3 of the quantile from df 20 up
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


@dataclass(frozen=True)
class Ratio:
    """A ratio, its 95% interval, and what it rests on (n rounds in one session, or n sessions)."""

    value: float
    low: float
    high: float
    n: int
    sessions: int = 1

    @property
    def scope(self) -> str:
        if self.sessions > 1:
            return f"across {self.sessions} sessions"
        return f"within one session, {self.n} rounds"

    @property
    def detectable(self) -> float:
        """The smallest relative difference this interval would have told from none."""
        return math.sqrt(self.high / self.low) - 1


def _mean_interval(logs: Sequence[float], n_sessions: int = 1) -> Ratio:
    n = len(logs)
    mean = statistics.fmean(logs)
    half = t975(n - 1) * statistics.stdev(logs) / math.sqrt(n)
    rounds = n if n_sessions == 1 else 0
    return Ratio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), rounds, n_sessions)


def paired(row: Sequence[float], base: Sequence[float]) -> Ratio | None:
    """row over base measured round by round (row[i] and base[i] in round i); None under two
    rounds, where no interval can be honest."""
    if len(row) != len(base):
        raise ValueError(f"paired sides differ in length: {len(row)} and {len(base)}")
    if len(row) < 2:
        return None
    return _mean_interval([math.log(r / b) for r, b in zip(row, base, strict=True)])


def unpaired(row: Sequence[float], base: Sequence[float]) -> Ratio | None:
    """row over base without rounds in common: Student's interval on the difference of the
    two mean logs, the variance pooled (each side is fresh processes on the same machine, so
    their spreads are alike; Welch's df over-covers at three a side)."""
    return contrast([(row, 1.0), (base, -1.0)])


def contrast(groups: Sequence[tuple[Sequence[float], float]]) -> Ratio | None:
    """exp(Σ wᵢ · mean log groupᵢ) and its t-interval, the groups' variance pooled: a ratio of
    two rows (weights 1, -1), or of two rows each read against its own session's controls
    (1 for a row, -1/k for each of its k controls; the other side negated). None where a
    group has under two values."""
    if not groups or any(len(values) < 2 for values, _ in groups):
        return None
    logs = [([math.log(v) for v in values], weight) for values, weight in groups]
    df = sum(len(a) - 1 for a, _ in logs)
    var = sum((len(a) - 1) * statistics.variance(a) for a, _ in logs) / df
    half = t975(df) * math.sqrt(var * sum(w**2 / len(a) for a, w in logs))
    mean = sum(w * statistics.fmean(a) for a, w in logs)
    fewest = min(len(a) for a, _ in logs)
    return Ratio(math.exp(mean), math.exp(mean - half), math.exp(mean + half), fewest)


def median_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """(low, high, coverage): the distribution-free interval of a median from order
    statistics, the narrowest whose coverage is at least 95%, or the range where no pair of
    order statistics reaches it (under six values: three give 75%, five 93.8%); coverage is
    what it really holds, to be printed beside it."""
    ordered = sorted(values)
    n = len(ordered)

    def outside(k: int) -> float:  # P(the median lies below the k-th smallest), both tails
        return 2 * sum(math.comb(n, i) for i in range(k)) / 2**n

    k = 1
    while k + 1 <= n // 2 and 1 - outside(k + 1) >= CONFIDENCE:
        k += 1
    return ordered[k - 1], ordered[n - k], 1 - outside(k)


def pooled(sessions: Sequence[Ratio]) -> Ratio | None:
    """One ratio from several sessions of one machine: each session's estimate is one
    observation of a quantity that moves between sessions (random effects), so the interval is
    the t-interval of the session means; under two sessions, None."""
    if len(sessions) < 2:
        return None
    return _mean_interval([math.log(s.value) for s in sessions], n_sessions=len(sessions))


def word(ratio: Ratio, higher_is_better: bool = False, margin: float = MARGIN) -> str:
    """What the interval says, judged on its bounds as printed (two decimals, so [1.00–1.07]
    is not called dearer): cheaper/dearer (faster/slower) where it excludes 1, within ±M%
    where it lies inside the margin, can't tell otherwise, with the smallest difference the
    interval could have shown."""
    low, high = round(ratio.low, 2), round(ratio.high, 2)
    if low > 1 or high < 1:
        better = (low > 1) == higher_is_better
        if higher_is_better:
            return "faster" if better else "slower"
        return "cheaper" if better else "dearer"
    if low >= 1 - margin and high <= 1 + margin:
        return f"within ±{margin:.0%}"
    held = Ratio(ratio.value, min(ratio.low, 1.0), max(ratio.high, 1.0), ratio.n)
    return f"can't tell (a difference under {held.detectable:.0%} would not show here)"


def worded(ratio: Ratio, higher_is_better: bool = False) -> str:
    """×r [low–high] (scope), and what the interval says."""
    return (
        f"×{ratio.value:.2f} [{ratio.low:.2f}–{ratio.high:.2f}] ({ratio.scope}), "
        f"{word(ratio, higher_is_better)}"
    )
