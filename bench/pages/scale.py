"""The scale section: cost per unit of work against N, on log-log axes, with growth exponents.

A design's cost is not one number but a curve: a timer heap costs O(log n) per sleeper, a
sorted list O(n), a ``select()`` loop pays per watched descriptor on every wake-up. So for each
series below (CPU per sleeper by sleepers, CPU per request by connections, idle CPU by idle
sockets) this module draws every row's median cost against N on log-log axes, and computes, for
each row, its **growth exponent** k between the two largest N it finished:

    k = log(cost(N2) / cost(N1)) / log(N2 / N1)

so cost per unit grows as N^k there. For a per-unit cost (per sleeper, per request) the total
grows as N^(k+1): k ≈ 0 is linear in total, k ≈ 1 quadratic. A row that did not finish at a
larger N (its time cap) or stopped at a stated limit says so beside its exponent: that is a
result too. Everything is computed from the figures the report's tables already summarise
(:func:`bench.render.rows.rendered_rows`), so the section never shows a figure the tables do not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from bench import headline
from bench.plan import FLOOR  # the echo anchor with no design: growth it shows, every row shares
from bench.render import charts
from bench.render.tables import sessions_line
from bench.studies import sleep

FLAT = 0.15  # |k| below this reads as "flat": cost per unit does not depend on N there
NOT_A_FIGURE = ("did not finish", "limit", "failed", "invalid")


@dataclass(frozen=True)
class Series:
    """One cost-per-unit curve family: a stored figure against one parameter."""

    name: str  # the chart is reports/charts/<mode>-scale-<name>.png
    workload: str
    title: str
    metric: str  # the stored figure (a median per row and point)
    factor: float  # displayed value = stored value × factor
    unit: str  # the y axis and the table's unit
    x: str  # the parameter that is N
    x_label: str
    where: tuple[tuple[str, object], ...] = ()  # only points with these parameter values
    defaults: tuple[tuple[str, object], ...] = ()  # parameter values of points that predate it
    per_unit: bool = True  # a cost per unit of N: the total grows as N^(k+1)


SERIES = (
    Series(
        "sleep",
        "sleep",
        "CPU per sleeper by sleepers",
        "cpu_per_sleeper_us",
        1.0,
        "CPU per sleeper (µs)",
        "tasks",
        "sleepers (N)",
        where=(("mode", "sleepers"),),
    ),
    Series(
        "cancel",
        "sleep",
        "Cancel-heavy: CPU per sleeper by sleepers",
        "cpu_per_sleeper_us",
        1.0,
        "CPU per sleeper (µs)",
        "tasks",
        f"sleepers (N), {sleep.CANCEL['fraction']:.0%} cancelled",
        where=(("mode", "cancel"),),
    ),
    Series(
        "echo",
        "echo",
        "Echo: server CPU per request by connections "
        f"({headline.size_text(headline.HEADLINE_POINT['size'])}, fixed offered load)",
        "server_cpu_us",
        1.0,
        "server CPU per request (µs)",
        "connections",
        "connections (N)",
        where=(
            ("measure", headline.PACED),
            ("size", headline.HEADLINE_POINT["size"]),
            (headline.DERIVED, None),  # declared rates only: never an old point's derived one
            (headline.CURVE[0], None),
            headline.PLAIN,
        ),
    ),
    Series(
        "idle",
        "sleep",
        "Idle CPU by idle sockets",
        "idle_cpu_pct",
        1.0,
        "idle CPU (% of wall)",
        "sockets",
        "idle sockets watched (N)",
        where=(("mode", "idle"),),
        defaults=(("sockets", 1000),),
        per_unit=False,
    ),
)


@dataclass
class Curve:
    """One row's costs against N, and where it has none."""

    label: str
    kind: str
    values: dict[int, float]  # N -> median cost (display units)
    stopped: dict[int, str]  # N -> why there is no figure ("did not finish in 120 s", ...)

    def exponent(self) -> tuple[float, int, int] | None:
        """(k, N1, N2) between the two largest N with a positive figure, or None."""
        finished = sorted(n for n, v in self.values.items() if v > 0)
        if len(finished) < 2:
            return None
        n1, n2 = finished[-2], finished[-1]
        k = math.log(self.values[n2] / self.values[n1]) / math.log(n2 / n1)
        return k, n1, n2


def holds(series: Series, params: dict) -> bool:
    """True for a point of this series (its parameters with the series' defaults)."""
    params = {**dict(series.defaults), **params}
    return series.x in params and all(params.get(k) == v for k, v in series.where)


def curves(series: Series, points: list[tuple[dict, list]]) -> list[Curve]:
    """Every row's curve for one series, from (params, rendered rows) of a workload's points."""
    by_label: dict[str, Curve] = {}
    for params, rows in points:
        params = {**dict(series.defaults), **params}
        if not holds(series, params):
            continue
        n = params[series.x]
        for r in rows:
            curve = by_label.setdefault(r.label, Curve(r.label, r.kind, {}, {}))
            stat = r.summary.stats.get(series.metric) if r.summary.status == "ok" else None
            if stat is not None:
                curve.values[n] = stat.median * series.factor
            elif r.summary.status in NOT_A_FIGURE:
                reason = r.summary.reason.splitlines()[0] if r.summary.reason else ""
                curve.stopped[n] = f"{r.summary.status} {reason}".strip()
    return [c for c in by_label.values() if c.values or c.stopped]


def reading(k: float, per_unit: bool) -> str:
    """What an exponent says, in words."""
    total = f"; total ∝ N^{k + 1:.2f}" if per_unit else ""
    if abs(k) < FLAT:
        shape = "flat per unit (linear in total)" if per_unit else "flat"
    elif k > 0:
        shape = "grows with N"
    else:
        shape = "falls with N (fixed costs amortised)"
    return f"{shape}{total}"


def _cell(curve: Curve, n: int, digits: int) -> str:
    if n in curve.values:
        return f"{curve.values[n]:,.{digits}f}"
    if n in curve.stopped:
        return f"**{curve.stopped[n]}**"
    return "—"


def table(series: Series, found: list[Curve]) -> str:
    """Costs at every N, the exponent between the two largest finished N, and what it says."""
    ns = sorted({n for c in found for n in (*c.values, *c.stopped)})
    every = [v for c in found for v in c.values.values() if v > 0]
    digits = 3 if every and min(every) < 1 else 1
    body = []
    for curve in sorted(found, key=_order):
        found_k = curve.exponent()
        if found_k is None:
            k_text, said = "—", "fewer than two finished points"
        else:
            k, n1, n2 = found_k
            k_text = f"{k:+.2f} ({n1:,}→{n2:,})"
            said = reading(k, series.per_unit)
        beyond = [n for n in curve.stopped if not curve.values or n > max(curve.values)]
        if beyond:
            said += f"; no figure at {', '.join(f'{n:,}' for n in sorted(beyond))} (see the row)"
        body.append([curve.label, *(_cell(curve, n, digits) for n in ns), k_text, said])
    headers = ["variant · style", *(f"N = {n:,}" for n in ns), "exponent k", "reading"]
    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)


def _order(curve: Curve) -> tuple:
    found = curve.exponent()
    return (found is None, found[0] if found else 0.0, curve.label)


def sentences(series: Series, found: list[Curve]) -> str:
    """Who scales best and worst at this series, and who did not finish, from the exponents."""
    measured = [(c.exponent()[0], c.label) for c in found if c.exponent() is not None]
    parts = []
    if measured:
        measured.sort()
        (low, low_label), (high, high_label) = measured[0], measured[-1]
        parts.append(
            f"Lowest exponent: {low_label} (k = {low:+.2f}); highest: {high_label} "
            f"(k = {high:+.2f})."
        )
        flat = [label for k, label in measured if abs(k) < FLAT]
        if flat and len(flat) < len(measured):
            parts.append(f"Flat (|k| < {FLAT}): {len(flat)} of {len(measured)} rows.")
        parts += against_the_floor(found)
    by_status: dict[str, list[str]] = {}
    for c in sorted(found, key=lambda c: c.label):
        for n, why in sorted(c.stopped.items()):
            status = next((s for s in NOT_A_FIGURE if why.startswith(s)), why)
            by_status.setdefault(status, []).append(f"{c.label} at {n:,}")
    for status, where in by_status.items():
        parts.append(f"No figure ({status}): {', '.join(where)}.")
    return " ".join(parts) or "No row has two finished points yet."


def against_the_floor(found: list[Curve]) -> list[str]:
    """Growth that a bare selector loop shows too is not a design's: say how many share it.

    The floor (an anchor with one callback per ready socket, nothing else) has no design to
    speak of, so an exponent it shares belongs to what every row has in common (the kernel's
    sockets, the caches); a row's own design shows only as growth beyond the floor's. Only
    exponents over the floor's own two N are compared.
    """
    floor = next((c for c in found if c.label.startswith(FLOOR)), None)
    if floor is None or floor.exponent() is None:
        return []
    k_floor, n1, n2 = floor.exponent()
    others = [
        (c.exponent()[0], c.label)
        for c in found
        if c is not floor and c.exponent() is not None and c.exponent()[1:] == (n1, n2)
    ]
    if not others:
        return []
    near = [label for k, label in others if abs(k - k_floor) < FLAT]
    beyond = [f"{label} ({k:+.2f})" for k, label in others if k - k_floor >= FLAT]
    sentence = (
        f"{FLOOR}, a bare selector loop, has k = {k_floor:+.2f} ({n1:,}→{n2:,}): {len(near)} "
        f"of the {len(others)} other rows measured there are within {FLAT} of it, so their "
        "scaling there is the kernel's and the machine's, not their design's"
    )
    sentence += f"; beyond it: {', '.join(beyond)}." if beyond else "; none grows beyond it."
    return [sentence]


STYLE = {"home-made": "-", "reference": "--", "anchor": ":"}


def chart(series: Series, found: list[Curve], mode: str, chart_dir: Path) -> Path | None:
    """Log-log lines of cost per unit against N, one per row; × where a row stopped."""
    drawable = [c for c in found if any(v > 0 for v in c.values.values())]
    if not drawable:
        return None
    path = chart_dir / f"{mode}-scale-{series.name}.png"
    stamp = charts.fingerprint(mode, series, drawable, drawn_by=__file__)
    if charts.current(path, stamp):
        return path
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    # Small multiples, one panel per kind (home-made, references, anchors) on shared axes:
    # 21 lines on one log axis were unreadable.
    kinds = [k for k in ("home-made", "reference", "anchor") if any(c.kind == k for c in drawable)]
    most = max(sum(c.kind == k for c in drawable) for k in kinds)  # legend lines under a panel
    figure, axes = plt.subplots(
        1,
        len(kinds),
        figsize=(5.2 * len(kinds), 4.8 + 0.17 * most),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    plain = FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1 else f"{value:g}")
    values = [v for c in drawable for v in c.values.values() if v > 0]
    narrow = max(values) / min(values) < 100
    for axis, kind in zip(axes[0], kinds, strict=True):
        _curves(axis, [c for c in drawable if c.kind == kind], plt.get_cmap("tab10"))
        axis.set_xscale("log")
        axis.set_yscale("log")
        for which in (axis.xaxis, axis.yaxis):
            which.set_major_formatter(plain)
        # numbered minor ticks where the range is narrow (a decade has no major tick inside)
        axis.yaxis.set_minor_formatter(plain if narrow else FuncFormatter(lambda v, _: ""))
        axis.tick_params(axis="y", which="minor", labelsize=7)
        axis.set_xlabel(series.x_label)
        axis.grid(True, which="both", alpha=0.25)
        axis.set_title(PANEL_TITLES[kind], fontsize=10)
        axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=7, frameon=False)
    axes[0][0].set_ylabel(series.unit + " (log)")
    figure.suptitle(f"{series.title} ({mode} run)", x=0.01, ha="left", fontsize=11)
    figure.text(
        0.01,
        0.01,
        "log-log; k = growth exponent of cost per unit between the two largest N finished;\n"
        "× at the top: no figure at that N (did not finish, limit, failed or invalid); "
        "one panel per kind of row, on the same axes",
        fontsize=7,
        color="#444444",
    )
    figure.tight_layout(rect=(0, 0.05, 1, 0.96))
    charts.save(figure, path, stamp, dpi=100)
    return path


PANEL_TITLES = {
    "home-made": "home-made loops",
    "reference": "reference loops",
    "anchor": "anchor servers",
}


def _curves(axis, drawable: list[Curve], palette) -> None:
    """One line per row (style by kind, k in its label), × stacked above where it stopped."""
    if not drawable:
        return
    top = max(v for c in drawable for v in c.values.values())
    stacked: dict[int, int] = {}  # N -> crosses drawn there so far (stacked, not overdrawn)
    for i, curve in enumerate(sorted(drawable, key=lambda c: c.label)):
        colour = palette(i % 10)
        xs = sorted(n for n, v in curve.values.items() if v > 0)
        label = curve.label
        found_k = curve.exponent()
        if found_k is not None:
            label += f"  k={found_k[0]:+.2f}"
        axis.plot(
            xs,
            [curve.values[n] for n in xs],
            STYLE.get(curve.kind, "-"),
            marker="o",
            markersize=4,
            color=colour,
            label=label,
            lw=2 if curve.kind == "home-made" else 1.2,
        )
        for n in curve.stopped:
            height = top * 1.6 * 1.15 ** stacked.get(n, 0)
            stacked[n] = stacked.get(n, 0) + 1
            axis.plot([n], [height], marker="x", color=colour, markersize=9, mew=2)


def section(
    points_of: Callable[[str], list[tuple[dict, list]]],
    mode: str,
    chart_dir: Path,
    out: Path,
    sessions: dict[str, dict] | None = None,
) -> list[str]:
    """The markdown of the scale section; points_of(workload) gives (params, rendered rows),
    `sessions` every stored session by name (where each table's rows ran)."""
    lines = [
        "## Scale",
        "",
        "How cost per unit of work grows with N, on log-log axes. **k** is each row's growth "
        "exponent between the two largest N it finished: cost per unit ∝ N^k there (for a cost "
        "per sleeper or per request the total grows as N^(k+1): k ≈ 0 is linear in total, "
        f"k ≈ 1 quadratic; |k| < {FLAT} reads as flat). Computed from the medians in the tables "
        "above; a row with no figure at a larger N says why (did not finish within its time "
        "cap, a stated limit, a failure).",
        "",
    ]
    any_series = False
    for series in SERIES:
        read = points_of(series.workload)
        found = curves(series, read)
        if not any(len({*c.values, *c.stopped}) > 1 for c in found):
            continue  # one N only (the quick run's idle and cancel-heavy): nothing to scale
        any_series = True
        lines += [f"### {series.title}", "", table(series, found), ""]
        names = [row.session for params, rows in read if holds(series, params) for row in rows]
        lines += sessions_line(sessions or {}, names)
        lines += [f"*What this shows:* {sentences(series, found)}", ""]
        path = chart(series, found, mode, chart_dir)
        if path is not None:
            relative = path.relative_to(out.parent).as_posix()
            lines += [f"![{series.title}]({relative})", ""]
    if not any_series:
        lines += ["No stored results span more than one N yet.", ""]
    return lines
