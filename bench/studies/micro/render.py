"""Micro, the rendering side: each row's harness note, what a table says about the operations,
and, where both harnesses ran, the two side by side.
"""

from __future__ import annotations

import statistics

from bench.render.tables import sessions_line
from bench.studies.micro import HEADLINE, METRICS, OPERATIONS
from bench.study import Rendering
from bench.summary import summarize


def detail_column(params: dict) -> str | None:
    """Under pyperf, a column with its standard deviation per operation (its own spread)."""
    return "pyperf std dev (% of mean)" if params.get("harness") == "pyperf" else None


def detail(reps: list[dict]) -> str:
    """pyperf's standard deviation per operation, from the one repetition that holds them."""
    spreads = next((rep["stdev_pct"] for rep in reps if rep.get("stdev_pct")), {})
    return ", ".join(f"{op} {pct:.1f}" for op, pct in spreads.items()) or "—"


# The standard error of a median over n normal draws is √(π/2) σ/√n.
STEADY_PCT = 6.0
# pyperf's own threshold: it warns where the standard deviation is at least this share of the
# mean, in percent (pyperf/_cli.py, the stability check before its "may be unstable" warning).
PYPERF_UNSTABLE = 10.0


def section_end(stored_points: dict, sessions: dict | None = None) -> list[str]:
    """Both harnesses side by side, per row and operation: what keeping the lab's shows.

    Full run only (the quick one has pyperf alone). Each pair is one operation of one row, both
    figures from the same session; the summary sentence separates the pairs pyperf found
    steady from the rest, so a disagreement can be read as the harness's or the machine's.
    """
    by_harness = {}
    for point in stored_points.values():
        by_harness["pyperf" if point["params"].get("harness") == "pyperf" else "lab"] = point
    if len(by_harness) < 2:
        return []
    pyperf, lab = by_harness["pyperf"], by_harness["lab"]
    lines = [
        "### The two harnesses side by side",
        "",
        "The same programs and operations, pyperf's figure against the lab harness's median, "
        "row by row (ns per operation). A ratio near 1 where pyperf's standard deviation is "
        f'small (under {STEADY_PCT:g}%, "steady") says the harnesses agree; a ratio far from 1 '
        "with a large standard deviation is the shared machine's noise in one of them.",
        "",
        "| variant · style | operation | pyperf (std dev) | lab harness median [min–max] "
        "| lab / pyperf |",
        "|---|---|--:|--:|--:|",
    ]
    steady, noisy = [], []
    for key, entry in pyperf["rows"].items():
        figures = next((rep for rep in entry["reps"] if rep.get("stdev_pct")), None)
        beside = lab["rows"].get(key)
        if figures is None or beside is None:
            continue
        label = f"{entry['variant']} · {entry['style']}"
        stats = summarize(beside["reps"], METRICS).stats
        for op in OPERATIONS:
            if figures.get(op) is None or op not in stats:
                continue
            spread, ratio = figures["stdev_pct"].get(op), stats[op].median / figures[op]
            (steady if spread is not None and spread < STEADY_PCT else noisy).append(ratio)
            lines.append(
                f"| {label} | {op} | {figures[op]:,.0f} ({spread:.1f}%) | "
                f"{stats[op].median:,.0f} [{stats[op].low:,.0f}–{stats[op].high:,.0f}] | "
                f"{ratio:.2f} |"
            )
    if not steady and not noisy:
        return []
    said = []
    for name, ratios in (("steady", steady), ("noisier", noisy)):
        if ratios:
            said.append(
                f"on the {len(ratios)} {name} pairs lab / pyperf runs from {min(ratios):.2f} "
                f"to {max(ratios):.2f} (median {statistics.median(ratios):.2f})"
            )
    lines += [
        "",
        f"*What this shows:* {'; '.join(said)}. pyperf is the headline; the lab harness is "
        "kept beside it as a second, independent figure taken minutes apart, which is what "
        "makes a pyperf stability warning readable.",
        "",
        *sessions_line(
            sessions or {}, [e.get("session") for p in (pyperf, lab) for e in p["rows"].values()]
        ),
    ]
    return lines


def observations(params: dict, rows: list) -> list[str]:
    """Per operation other than the headline: the cheapest row and its ratio to asyncio.

    Under pyperf, also which rows pyperf warned about (its stability checks).
    """
    sentences = []
    warned = sorted(
        {f"{r.label} ({', '.join(sorted(r.summary.warned))})" for r in rows if r.summary.warned}
    )
    if warned:
        sentences.append(
            f"pyperf warned that these may be unstable (standard deviation ≥ {PYPERF_UNSTABLE:g}% "
            "of the mean, "
            f"outliers or too few samples; the shared machine): {'; '.join(warned)}."
        )
    for metric in METRICS:
        if metric.name == HEADLINE:
            continue
        measured = [r for r in rows if r.summary.status == "ok" and metric.name in r.summary.stats]
        if measured:
            best = min(measured, key=lambda r: r.summary.stats[metric.name].median)
            share = best.ratio(metric)
            ratio_text = f", ×{share:.2f} asyncio" if share is not None else ""
            sentences.append(
                f"Cheapest {metric.name}: {best.label} "
                f"({best.summary.stats[metric.name].median:,.0f} ns{ratio_text})."
            )
    return sentences


RENDERING = Rendering(
    detail_column=detail_column,
    detail=detail,
    observations=observations,
    section_end=section_end,
)
