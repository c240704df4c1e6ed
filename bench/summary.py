"""From stored repetitions to the figures a report prints: medians, min-max, validity, ratios.

The rules, in one place so the runner's console lines and the report agree:

- a repetition that raised failed, and its row shows failed with the reason and no figure (or
  only that figure, where the repetition's other figures were measured);
- one whose peer used at least ``SATURATION`` of its core, or whose record says ``invalid``,
  is invalid; a row with fewer than half its repetitions valid shows invalid, with the reason,
  and no figure; otherwise its figures come from its valid repetitions only;
- one that overran its row's time cap makes the row "did not finish in N s", a result;
- a failure that is a loop's stated limit (``KNOWN_LIMITS``) shows as "limit";
- a figure is the median of the repetitions, with their min and max; a row stops after its
  minimum repetitions once its headline figure's spread is within ``SPREAD_TOLERANCE``
  (:func:`complete`), and otherwise runs up to its maximum.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bench.plan import Metric

SATURATION = 0.90  # share of one core at which a peer counts as saturated
SPREAD_TOLERANCE = 0.10  # (max - min) / median under which the minimum repetitions suffice

# Failures that are a loop's stated limit rather than a fault: (text in the error, the limit).
KNOWN_LIMITS = (
    ("out of range in select()", "select() cannot watch a descriptor numbered 1 024 or more"),
    ("beyond select()'s ceiling", "select() cannot watch a descriptor numbered 1 024 or more"),
    # The threads variant's spawn names the kernel's limits when it refuses a thread.
    ("can't start new thread", "the kernel refused another thread (its thread, pid or map limit)"),
)


@dataclass(frozen=True)
class Stat:
    median: float
    low: float
    high: float


@dataclass
class RowSummary:
    """A row's figures, or why it has none."""

    # "ok", "invalid", "failed", "did not finish", "limit", "not measured" or "unavailable"
    status: str
    reason: str = ""
    stats: dict[str, Stat] = field(default_factory=dict)
    valid: int = 0
    total: int = 0
    peer_share: float | None = None  # median share of its core the peer used
    errors: dict[str, str] = field(default_factory=dict)  # figure -> why it is missing
    warned: set[str] = field(default_factory=set)  # figures the harness (pyperf) called unstable
    detail: str = ""  # a study's note on the row (echo: which load generator measured it)
    redone: int = 0  # repetitions measured again because they stalled (bench.summary.counted)
    # figure -> its valid repetitions' values (what a ratio's interval is computed from)
    values: dict[str, list[float]] = field(default_factory=dict)
    # figure -> the same values under their rounds (bench.summary.by_round): a ratio pairs them
    rounds: dict[str, dict[int, float]] = field(default_factory=dict)
    # figure -> its relative standard error where one repetition holds a harness's own
    # repeats (pyperf's): what a ratio's interval is drawn from when a side has one value
    relative_error: dict[str, float] = field(default_factory=dict)
    # Invalid because the peer saturated: (server, peer) CPU µs per request, where recorded.
    costs: tuple[float, float] | None = None
    # Invalid because the peer saturated: each figure's median over those repetitions, a
    # lower bound of what the server can do (a chart draws it as "≥ ceiling", not last).
    at_least: dict[str, float] = field(default_factory=dict)


def peer_saturated(rep: dict) -> bool:
    share = rep.get("peer_cpu_share")
    return share is not None and share >= SATURATION


def invalid(rep: dict) -> bool:
    return peer_saturated(rep) or bool(rep.get("invalid"))


def counted(reps: Sequence[dict]) -> list[dict]:
    """The repetitions a row counts: not those measured again because they stalled (each is
    kept in the store with its reason, ``redone``, and counted on the page, never in a
    figure)."""
    return [rep for rep in reps if not rep.get("redone")]


# A repetition is disturbed when, during its window, the machine's other processes used at
# least half a CPU or the hypervisor took a tenth of one (machine/activity.py reads both).
# Chosen from the windows the quick store records on the lab's 2-core AMD EPYC: alone (the
# session of 2026-11-27 16:07, 653 repetitions) others' CPU never passed 0.42 and steal 0.009;
# with a test suite running beside the bench (the sessions of 18:27 that day, 118
# repetitions) others' CPU had a median of 1.0 to 1.4 and steal reached 0.035.
DISTURBED_OTHERS_CPUS = 0.5
DISTURBED_STEAL_CPUS = 0.1


def disturbed(rep: dict) -> str | None:
    """Why the machine was not the repetition's own during its window, or None."""
    others, steal = rep.get("others_cpus"), rep.get("steal_cpus")
    if others is not None and others >= DISTURBED_OTHERS_CPUS:
        return f"disturbed: other processes used {others:.2f} CPUs during it"
    if steal is not None and steal >= DISTURBED_STEAL_CPUS:
        return f"disturbed: the hypervisor took {steal:.2f} CPUs during it"
    return None


def redo_reason(rep: dict, timed: bool = True) -> str | None:
    """Why a repetition must be measured again, or None: its study found it stalled (the
    server waited for a CPU something else held), or, for a figure that is a time, the
    machine was disturbed during it (a count or a size is not moved by the neighbours)."""
    if rep.get("stalled"):
        return rep.get("invalid")
    return disturbed(rep) if timed and not rep.get("error") else None


def valid_reps(reps: Sequence[dict]) -> list[dict]:
    """The repetitions a figure is taken from, as the row's own table reads them: its counted
    repetitions that are not invalid (its peer saturated, or declared so), where none failed
    and at least half are valid; none otherwise, for the table then gives the row no figure
    and says why (failed, a limit, invalid). Every reader of a figure goes through here, so no
    page quotes a median the row's table refuses."""
    kept = counted(reps)
    if any(rep.get("error") for rep in kept):
        return []
    valid = [rep for rep in kept if not invalid(rep)]
    return valid if has_figure(len(valid), len(kept)) else []


def has_figure(valid: int, total: int) -> bool:
    """A row has a figure where at least half its counted repetitions are valid."""
    return valid * 2 >= total


def valid_values(reps: Sequence[dict], metric: str) -> list[float]:
    """metric over the valid repetitions, where it is a number: what a figure is the median of."""
    return [rep[metric] for rep in valid_reps(reps) if isinstance(rep.get(metric), int | float)]


def by_round(reps: Sequence[dict], metric: str, rate: float | None = None) -> dict[int, float]:
    """metric over the valid repetitions, each under its round (at one offered rate if given).

    The runner interleaves a point's rows: the i-th counted repetition of a row is the one of
    its session's i-th round, measured beside the i-th of every other row, so two rows' figures
    of one round share whatever the machine did then (bench.render.intervals pairs them)."""
    figure = {id(rep) for rep in valid_reps([r for r in reps if rate in (None, r.get("rate"))])}
    return {
        i: rep[metric]
        for i, rep in enumerate(counted(reps))
        if id(rep) in figure and isinstance(rep.get(metric), int | float)
    }


def _median_of(reps: Sequence[dict], key: str) -> float | None:
    values = [rep[key] for rep in reps if rep.get(key) is not None]
    return statistics.median(values) if values else None


def invalid_summary(reps: Sequence[dict], peer_share: float | None, valid: int) -> RowSummary:
    """Why most repetitions are invalid: the peer saturated, or what the study said."""
    saturated = [rep for rep in reps if peer_saturated(rep)]
    told = [rep["invalid"] for rep in reps if rep.get("invalid") and not peer_saturated(rep)]
    summary = RowSummary("invalid", valid=valid, total=len(reps), peer_share=peer_share)
    if told and len(told) >= len(saturated):
        summary.reason = told[0]
        return summary
    peer = reps[0].get("peer", "peer")
    summary.reason = f"{peer} saturated its core ({peer_share:.0%} CPU)"
    numeric = {k for rep in saturated for k, v in rep.items() if isinstance(v, int | float)}
    summary.at_least = {k: v for k in numeric if (v := _median_of(saturated, k)) is not None}
    server, own = _median_of(saturated, "server_cpu_us"), _median_of(saturated, "peer_cpu_us")
    if server is not None and own is not None:
        summary.reason += f": server {server:.1f} µs per request, {peer} {own:.1f} µs"
        summary.costs = (server, own)
    return summary


def summarize(reps: Sequence[dict], metrics: Iterable[Metric]) -> RowSummary:
    """The figures of one row, and how many of its repetitions were measured again."""
    kept = counted(reps)
    summary = _summarize(kept, metrics)
    summary.redone = len(reps) - len(kept)
    return summary


def _summarize(reps: Sequence[dict], metrics: Iterable[Metric]) -> RowSummary:
    """The figures of one row from its counted repetitions."""
    total = len(reps)
    failed = [rep for rep in reps if rep.get("error")]
    shares = [rep["peer_cpu_share"] for rep in reps if rep.get("peer_cpu_share") is not None]
    peer_share = statistics.median(shares) if shares else None
    if not reps:
        return RowSummary("failed", "no repetitions stored", total=0)
    if failed:
        first = failed[0]
        if first.get("did_not_finish_s") is not None:
            kind = "s of CPU" if first.get("did_not_finish_kind") == "cpu" else "s"
            return RowSummary(
                "did not finish",
                f"in {first['did_not_finish_s']:g} {kind} (its cap; stopped)" + beyond(first),
                total=total,
                peer_share=peer_share,
            )
        limit = known_limit(first["error"])
        if limit:
            return RowSummary("limit", limit + beyond(first), total=total, peer_share=peer_share)
        return RowSummary("failed", first["error"], total=total, peer_share=peer_share)
    valid = [rep for rep in reps if not invalid(rep)]
    if not has_figure(len(valid), total):
        return invalid_summary(reps, peer_share, len(valid))
    stats, errors, kept, rounds = {}, {}, {}, {}
    for metric in metrics:
        values = [rep[metric.name] for rep in valid if rep.get(metric.name) is not None]
        reasons = [
            rep["failed_figures"][metric.name]
            for rep in valid
            if metric.name in rep.get("failed_figures", {})
        ]
        if reasons:  # one figure failed while the others were measured
            errors[metric.name] = reasons[0]
        elif values:
            stats[metric.name] = Stat(statistics.median(values), min(values), max(values))
            kept[metric.name] = values
            rounds[metric.name] = by_round(reps, metric.name)
    warned = {name for rep in valid for name in rep.get("pyperf_warnings") or {}}
    return RowSummary(
        "ok",
        stats=stats,
        valid=len(valid),
        total=total,
        peer_share=peer_share,
        errors=errors,
        warned=warned,
        values=kept,
        rounds=rounds,
    )


def ratio(value: float, baseline: float | None) -> float | None:
    """value / baseline, or None when there is no usable baseline."""
    if baseline is None or baseline == 0:
        return None
    return value / baseline


def beyond(rep: dict) -> str:
    """For a row not run at a point because it stopped at a smaller one: where it stopped."""
    found = rep.get("stopped_at")
    return "" if found is None else f", at {found[1]:,} {found[0]}: not run at more"


def known_limit(error: str) -> str | None:
    """The stated limit a failure shows, or None for a failure that is a fault."""
    for text, limit in KNOWN_LIMITS:
        if text in error:
            return limit
    return None


def spread(values: Sequence[float]) -> float:
    """(max - min) / median of some figures (0 for fewer than two, inf for a zero median)."""
    if len(values) < 2:
        return 0.0
    middle = statistics.median(values)
    return (max(values) - min(values)) / abs(middle) if middle else float("inf")


def complete(reps: Sequence[dict], repetitions: int, minimum: int | None, headline: str) -> bool:
    """True when a row needs no more repetitions.

    A failed (or capped) row is complete at its first failure. Otherwise it is complete at
    `repetitions`, or already at `minimum` when its headline figure's spread over the
    repetitions so far is at most SPREAD_TOLERANCE.
    """
    reps = counted(reps)
    if any(rep.get("error") for rep in reps):
        return True
    if len(reps) >= repetitions:
        return True
    if minimum is None or len(reps) < minimum:
        return False
    values = [rep[headline] for rep in reps if rep.get(headline) is not None]
    return len(values) == len(reps) and spread(values) <= SPREAD_TOLERANCE
