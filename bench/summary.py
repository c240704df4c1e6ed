"""From stored repetitions to the figures a report prints: medians, min-max, validity, ratios.

The rules, in one place so the runner's console lines and the report agree:

- A repetition that raised (a crash, a wrong byte, a wrong page set) failed; a row with a failed
  repetition is shown as failed, with the reason, and no figure. Where one figure of a
  repetition failed and the others were measured (a micro operation that hangs), that figure
  alone is shown as failed.
- A repetition whose peer (load generator or site server) used at least ``SATURATION`` of its
  core is invalid: the figure would measure the peer, not the loop. So is one whose workload
  says why in its record (``invalid``: an echo server that could not keep the offered rate).
  A row with fewer than half of its repetitions valid is shown as invalid, with the reason
  (for a saturated peer, its CPU share, and where the records have them, the server's and the
  peer's CPU per request), and no figure; otherwise its figures come from its valid
  repetitions only.
- A figure is the median of the repetitions, with their min and max.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bench.plan import Metric

SATURATION = 0.90  # share of one core at which a peer counts as saturated


@dataclass(frozen=True)
class Stat:
    median: float
    low: float
    high: float


@dataclass
class RowSummary:
    """A row's figures, or why it has none."""

    status: str  # "ok", "invalid", "failed" or "not measured"
    reason: str = ""
    stats: dict[str, Stat] = field(default_factory=dict)
    valid: int = 0
    total: int = 0
    peer_share: float | None = None  # median share of its core the peer used
    errors: dict[str, str] = field(default_factory=dict)  # figure -> why it is missing
    detail: str = ""  # a workload's note on the row (echo: which load generator measured it)
    # Invalid because the peer saturated: (server, peer) CPU µs per request, where recorded.
    costs: tuple[float, float] | None = None


def peer_saturated(rep: dict) -> bool:
    share = rep.get("peer_cpu_share")
    return share is not None and share >= SATURATION


def invalid(rep: dict) -> bool:
    return peer_saturated(rep) or bool(rep.get("invalid"))


def _median_of(reps: Sequence[dict], key: str) -> float | None:
    values = [rep[key] for rep in reps if rep.get(key) is not None]
    return statistics.median(values) if values else None


def invalid_summary(reps: Sequence[dict], peer_share: float | None, valid: int) -> RowSummary:
    """Why most repetitions are invalid: the peer saturated, or what the workload said."""
    saturated = [rep for rep in reps if peer_saturated(rep)]
    told = [rep["invalid"] for rep in reps if rep.get("invalid") and not peer_saturated(rep)]
    summary = RowSummary("invalid", valid=valid, total=len(reps), peer_share=peer_share)
    if told and len(told) >= len(saturated):
        summary.reason = told[0]
        return summary
    peer = reps[0].get("peer", "peer")
    summary.reason = f"{peer} saturated its core ({peer_share:.0%} CPU)"
    server, own = _median_of(saturated, "server_cpu_us"), _median_of(saturated, "peer_cpu_us")
    if server is not None and own is not None:
        summary.reason += f": server {server:.1f} µs per request, {peer} {own:.1f} µs"
        summary.costs = (server, own)
    return summary


def summarize(reps: Sequence[dict], metrics: Iterable[Metric]) -> RowSummary:
    """The figures of one row from its stored repetitions."""
    total = len(reps)
    failed = [rep for rep in reps if rep.get("error")]
    shares = [rep["peer_cpu_share"] for rep in reps if rep.get("peer_cpu_share") is not None]
    peer_share = statistics.median(shares) if shares else None
    if not reps:
        return RowSummary("failed", "no repetitions stored", total=0)
    if failed:
        return RowSummary("failed", failed[0]["error"], total=total, peer_share=peer_share)
    valid = [rep for rep in reps if not invalid(rep)]
    if len(valid) * 2 < total:
        return invalid_summary(reps, peer_share, len(valid))
    stats, errors = {}, {}
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
    return RowSummary(
        "ok", stats=stats, valid=len(valid), total=total, peer_share=peer_share, errors=errors
    )


def ratio(value: float, baseline: float | None) -> float | None:
    """value / baseline, or None when there is no usable baseline."""
    if baseline is None or baseline == 0:
        return None
    return value / baseline
