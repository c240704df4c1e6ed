"""TLS's cost per request beside the plain one: echo's headline point with and without TLS.

Each stored TLS point (echo's ``tls`` parameter) is read beside its plain twin, the point with
the same parameters but that one; per row, the server's CPU per request plain, over TLS, and
their ratio with its interval (:func:`bench.render.intervals.ratio_interval`, rounds paired as
:func:`bench.summary.by_round` numbers them where both rows come from one session). Nothing
is rendered where no TLS point is stored. Handshakes happen before the measured window, so
the figures are steady-state requests: the record layer's cost, and the loop's share of it.
"""

from __future__ import annotations

import statistics

from tabulate import tabulate

from bench.headline import HEADLINE_AT, TLS, regime
from bench.render.intervals import CONFIDENCE, ratio_interval
from bench.render.tables import sessions_line
from bench.studies.tls import METRIC, TITLE
from bench.summary import by_round, valid_values


def twins(stored_points: dict[str, dict]) -> list[tuple[str, dict, dict]]:
    """(measure in words, plain point, TLS point) for every TLS point whose twin is stored,
    closed loop first."""
    found = []
    for point in stored_points.values():
        params = point["params"]
        if not params.get(TLS):
            continue
        plain = {k: v for k, v in params.items() if k != TLS}
        twin = next((p for p in stored_points.values() if p["params"] == plain), None)
        if twin is not None:
            found.append((regime(params), twin, point))
    return sorted(found, key=lambda found: found[0])  # "closed loop" < "fixed load"


def label(key: str) -> str:
    return key.replace("/native", " (anchor)").replace("/", " · ")


def median(entry: dict | None) -> float | None:
    values = valid_values(entry["reps"], METRIC) if entry else []
    return statistics.median(values) if values else None


def ratio(plain: dict | None, tls: dict | None) -> tuple[tuple[float, float, float] | None, bool]:
    """TLS over plain with its interval, and whether both rows come from one session (paired
    by round); from two sessions, unpaired (bench.uncertainty)."""
    if not plain or not tls:
        return None, False
    same = plain["session"] == tls["session"]
    values = by_round if same else valid_values
    return ratio_interval(values(tls["reps"], METRIC), values(plain["reps"], METRIC)), same


# A stored row without a figure: its own table (closed loop or fixed load, plain or TLS) says why.
NO_FIGURE = "no figure"


def cell(entry: dict | None) -> str:
    """The row's median, "—" where it is not stored, NO_FIGURE where its table gives none."""
    if entry is None:
        return "—"
    value = median(entry)
    return NO_FIGURE if value is None else f"{value:.1f}"


def ratio_cell(found: tuple[float, float, float] | None, same: bool) -> str:
    if found is None:
        return "—"
    value, low, high = found
    return f"×{value:.2f} [{low:.2f}–{high:.2f}]" + ("" if same else " †")


INTRODUCTION = (
    f"Server CPU per request (µs, median) at {HEADLINE_AT}, plain and over TLS, in each "
    "measure, and TLS over plain: the geometric mean of the per-round ratios with its "
    f"{CONFIDENCE:.0%} t-interval (bench/uncertainty.py). Where both come from one session "
    "(the TLS point measured after the plain "
    "one), rounds pair by their order: a pair shares the session, not the moment. Every "
    "handshake is done before the "
    "window opens: these are steady-state requests, what the record layer adds."
)


def lines(stored_points: dict[str, dict], sessions: dict[str, dict] | None = None) -> list[str]:
    """The subsection: a table (a row per echo row, three columns per measure), then how to
    read it and where TLS costs least and most. [] where no TLS point is stored."""
    pairs = twins(stored_points)
    if not pairs:
        return []
    keys = list(dict.fromkeys(key for _, _, tls in pairs for key in tls["rows"]))
    headers = ["row"]
    for measure, _, _ in pairs:
        headers += [f"{measure}: plain (µs)", f"{measure}: TLS (µs)", f"{measure}: TLS ÷ plain"]
    table, ratios, other_session = [], {measure: [] for measure, _, _ in pairs}, False
    no_figure = False
    for key in keys:
        line = [label(key)]
        for measure, plain, tls in pairs:
            a, b = plain["rows"].get(key), tls["rows"].get(key)
            found, same = ratio(a, b)
            other_session |= found is not None and not same
            if found is not None:
                ratios[measure].append((found[0], label(key)))
            line += [cell(a), cell(b), ratio_cell(found, same)]
            no_figure |= NO_FIGURE in (cell(a), cell(b))
        table.append(line)
    out = [
        f"### {TITLE}",
        "",
        INTRODUCTION,
        "",
        tabulate(table, headers, tablefmt="github", disable_numparse=True),
        "",
        *sessions_line(
            sessions or {},
            [row["session"] for _, a, b in pairs for p in (a, b) for row in p["rows"].values()],
        ),
    ]
    if other_session:
        out += ["† plain and TLS from different sessions: the ratio of two medians.", ""]
    if no_figure:
        out += [
            f"*{NO_FIGURE}*: the row's own table at that point has none and says why (most "
            "often the load generator saturated its core before the server did), so no ratio "
            "is read from it.",
            "",
        ]
    said = []
    for measure, found in ratios.items():
        if len(found) >= 2:
            found.sort()
            (low, cheapest), (high, dearest) = found[0], found[-1]
            said.append(
                f"{measure}: ×{statistics.median(r for r, _ in found):.2f} (median over "
                f"{len(found)} rows), from ×{low:.2f} ({cheapest}) to ×{high:.2f} ({dearest})"
            )
    if said:
        out += [f"*What TLS costs:* {'; '.join(said)}.", ""]
    return out
