"""The bench's interval method covers what it says: a declared 95% holds 93-97% of the time on
noise like the bench's own, at every number of rounds the bench runs, and is deterministic.

The noise model is read from the committed full run (reports/results/full/echo.json): each
row's spread of log server CPU per request (its robust sigma, at the quartiles over rows) and
how often a repetition lies more than 3 sigma above its row's median (interference only adds
time), so the simulation follows the data, not a figure typed here.
"""

import json
import math
import random
import statistics
from pathlib import Path

import pytest

from bench import uncertainty

STORE = Path(__file__).resolve().parent.parent / "reports/results/full/echo.json"
ROUNDS = (3, 6, 20)  # the quick run's side points, its headline point, the anchors' target
TRIALS = 3000  # Monte Carlo error of a coverage near 0.95: about ±0.4% (one sd)
TRUE = 1.2


def measured_noise() -> tuple[list[float], float]:
    """(the quartiles of the rows' robust sigmas, the share of repetitions 3 sigma above)."""
    sigmas, above, total = [], 0, 0
    for point in json.loads(STORE.read_text())["points"].values():
        for row in point["rows"].values():
            values = [
                r["server_cpu_us"]
                for r in row["reps"]
                if not r.get("invalid") and not r.get("redone") and r.get("server_cpu_us")
            ]
            if len(values) < 5:
                continue
            logs = [math.log(v) for v in values]
            mid = statistics.median(logs)
            sigma = 1.4826 * statistics.median(abs(x - mid) for x in logs)
            if sigma:
                sigmas.append(sigma)
                above += sum((x - mid) / sigma > 3 for x in logs)
                total += len(logs)
    return statistics.quantiles(sigmas, n=4), above / total


SIGMAS, OUTLIERS = measured_noise()


def coverage(method, n: int, sigma: float, seed: int) -> float:
    rng = random.Random(seed)

    def process(mu: float) -> float:
        x = rng.gauss(mu, sigma)
        if rng.random() < OUTLIERS:
            x += rng.uniform(3, 6) * sigma  # one-sided: a neighbour only adds time
        return math.exp(x)

    hits = 0
    for _ in range(TRIALS):
        row = [process(math.log(TRUE)) for _ in range(n)]
        base = [process(0.0) for _ in range(n)]
        ratio = method(row, base)
        hits += ratio.low <= TRUE <= ratio.high
    return hits / TRIALS


def test_the_noise_model_is_read_from_the_store():
    assert 0 < SIGMAS[0] < SIGMAS[2] < 1
    assert 0 <= OUTLIERS < 0.1


@pytest.mark.parametrize("n", ROUNDS)
@pytest.mark.parametrize("quartile", range(3))
@pytest.mark.parametrize("method", [uncertainty.paired, uncertainty.unpaired])
def test_a_95_interval_covers_93_to_97_percent(method, quartile, n):
    assert 0.93 <= coverage(method, n, SIGMAS[quartile], seed=n * 10 + quartile) <= 0.97


def test_pooling_sessions_narrows_the_interval():
    sessions = [uncertainty.paired([1.0, 1.1, 1.2], [1.0, 1.0, 1.0]) for _ in range(2)]
    sessions += [uncertainty.paired([1.1, 1.2, 1.3], [1.0, 1.0, 1.0])]
    three = uncertainty.pooled(sessions)
    six = uncertainty.pooled(sessions * 2)
    assert three.sessions == 3 and six.sessions == 6
    assert (six.high / six.low) < (three.high / three.low)
    assert uncertainty.pooled(sessions[:1]) is None


def test_the_same_figures_give_the_same_interval_in_any_order():
    row, base = [10.2, 11.0, 9.8, 10.5], [9.0, 9.4, 9.1, 9.9]
    assert uncertainty.unpaired(row, base) == uncertainty.unpaired(row[::-1], base[::-1])
    assert uncertainty.paired(row, base) == uncertainty.paired(row, base)


def test_the_words_say_what_is_known():
    def ratio(low, high):
        return uncertainty.Ratio(math.sqrt(low * high), low, high, 6)

    assert uncertainty.word(ratio(0.80, 0.90)) == "cheaper"
    assert uncertainty.word(ratio(1.10, 1.30)) == "dearer"
    assert uncertainty.word(ratio(1.10, 1.30), higher_is_better=True) == "faster"
    assert uncertainty.word(ratio(0.97, 1.03)) == "within ±5%"
    assert uncertainty.word(ratio(0.84, 1.51)).startswith("can't tell (a difference under 3")
    assert "level" not in uncertainty.worded(ratio(0.84, 1.51))


def test_t_quantiles_match_the_table_and_the_expansion():
    assert uncertainty.t975(2) == pytest.approx(4.3027, abs=1e-4)
    assert uncertainty.t975(40) == pytest.approx(2.0211, abs=1e-3)
    assert uncertainty.t975(22.5) == pytest.approx(2.0716, abs=2e-3)
    with pytest.raises(ValueError):
        uncertainty.t975(0.5)


@pytest.mark.parametrize("n", ROUNDS)
def test_a_ratio_read_against_each_sides_controls_covers_93_to_97_percent(n):
    # The interpreters' comparison: a row in each of two sessions, each read against its own
    # session's three controls; the machine drifts between sessions, moving row and controls
    # alike, so the drift cancels and the row's own move (TRUE) is what the interval holds.
    rng, sigma, hits = random.Random(n), SIGMAS[1], 0

    def session(mu: float, drift: float) -> list[float]:
        values = [rng.gauss(mu + drift, sigma) for _ in range(n)]
        return [math.exp(x + (rng.uniform(3, 6) * sigma if rng.random() < OUTLIERS else 0))
                for x in values]  # fmt: skip

    for _ in range(TRIALS):
        new, old = rng.gauss(0, 0.2), rng.gauss(0, 0.2)
        centres = [rng.gauss(0, 1) for _ in range(3)]
        groups = [(session(math.log(TRUE), new), 1.0), (session(0.0, old), -1.0)]
        groups += [(session(c, new), -1 / 3) for c in centres]
        groups += [(session(c, old), 1 / 3) for c in centres]
        found = uncertainty.contrast(groups)
        hits += found.low <= TRUE <= found.high
    assert 0.93 <= hits / TRIALS <= 0.97


@pytest.mark.parametrize("n", [3, 5, 6, 9, 20])
def test_a_medians_interval_says_how_much_it_covers(n):
    low, high, covers = uncertainty.median_interval(list(range(n)))
    assert low <= (n - 1) / 2 <= high
    if n < 6:  # no pair of order statistics reaches 95%: the range, with its true coverage
        assert (low, high) == (0, n - 1) and covers == pytest.approx(1 - 2 / 2**n)
    else:
        assert covers >= 0.95
    rng = random.Random(n)
    hits = 0
    for _ in range(TRIALS):
        lo, hi, _ = uncertainty.median_interval([rng.gauss(0, 1) for _ in range(n)])
        hits += lo <= 0 <= hi
    assert abs(hits / TRIALS - covers) < 0.02
