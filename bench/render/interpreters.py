"""The "Interpreters" section: the same rows on every CPython measured, read side by side.

For each figure of :mod:`bench.interpreter_figures` (echo server CPU per request closed loop
and at a fixed offered load, the switch, sleep CPU per sleeper at 100 000, crawler pages/s), a
table with a row per variant·style (echo's anchors too) and a column per interpreter: the
figure, its ratio to the same row on the reference interpreter
(``bench.interpreters.REFERENCE``) and to asyncio measured in the same session on the same
interpreter. A chart of the fixed-load cost by
interpreter, and sentences from the data: does uvloop still pay on each interpreter, which
design a newer one helps or hurts most, where the order of the loops changes. Each interpreter's
results are read from its own store (``reports/results/<mode>/python-X.Y/``); an interpreter
with nothing stored is named, with the command that measures it.
"""

from __future__ import annotations

from pathlib import Path

from tabulate import tabulate

from bench import registry
from bench.interpreter_figures import COST, FIGURES, Figure
from bench.interpreters import PYTHONS, REFERENCE
from bench.plan import BASELINE, YARDSTICK, Row
from bench.render.rows import RenderedRow, stored_points
from bench.store import load_mode

TITLE = "Interpreters"
MEASURE = " ".join(["python -m bench run --across", *(f"--python {v}" for v in PYTHONS)])
# python -> figure -> row -> (median, same-session asyncio median, status, why no figure)
Figures = dict[str, dict[str, dict[Row, tuple[float | None, float | None, str, str]]]]


def read(
    results: Path | None, mode: str, main: dict, main_points, main_python: str = REFERENCE
) -> dict[str, Figures]:
    """Per interpreter (those with results stored), per figure: each row's (median, its
    same-session asyncio median, status, why no figure)."""
    found: dict[str, Figures] = {}
    for python in PYTHONS:
        stores = main if python == main_python else _stores(results, mode, python)
        if not any(stores.values()):
            continue
        # The main tables' rows are the page's, summarized once.
        points_of = main_points if python == main_python else stored_points(stores, mode)
        found[python] = {f.name: _figure(f, points_of(f.workload)) for f in FIGURES}
    return found


def _stores(results: Path | None, mode: str, python: str) -> dict:
    return load_mode(results, mode, registry.names(), python) if results else {}


def _figure(figure: Figure, points: list[tuple[dict, list[RenderedRow]]]) -> dict:
    rows = next((rows for params, rows in points if figure.matches(params)), [])
    found = {}
    for rendered in rows:
        summary, base = rendered.summary, rendered.baseline
        stat = summary.stats.get(figure.metric) if summary.status == "ok" else None
        base_stat = base.stats.get(figure.metric) if base and base.status == "ok" else None
        found[rendered.row] = (
            stat.median if stat else None,
            base_stat.median if base_stat else None,
            summary.status if summary.status != "ok" else ("n/a" if stat is None else "ok"),
            summary.reason if summary.status != "ok" else "",
        )
    return found


def _cell(value: float | None, status: str, digits: int, *ratios: float | None) -> str:
    if value is None:
        return status
    text = f"{value:,.{digits}f}"
    marks = [f"{r:.2f}×" if r is not None else "–" for r in ratios]
    return f"{text} ({' · '.join(marks)})" if ratios else text


def table(figure: Figure, data: dict[str, Figures], unavailable: dict[str, dict]) -> str:
    """One figure: a row per variant·style, a column per interpreter with its ratios, then why
    a cell says "invalid"."""
    first = oldest(data)
    pythons = list(data)
    rows = sorted({row for p in pythons for row in data[p][figure.name]}, key=_order)
    body = []
    for row in rows:
        cells = [_label(row)]
        reference = data.get(first, {}).get(figure.name, {}).get(row, (None,))[0]
        for python in pythons:
            value, base, status, _ = data[python][figure.name].get(
                row, (None, None, "not measured", "")
            )
            if value is None and row.variant in unavailable.get(python, {}):
                status = "unavailable"
            vs_base = value / base if value and base else None
            if python == first:
                cells.append(_cell(value, status, figure.digits, vs_base))
                continue
            vs_ref = value / reference if value and reference else None
            cells.append(_cell(value, status, figure.digits, vs_ref, vs_base))
        body.append(cells)
    headers = [
        "row",
        *(
            f"Python {p} (× asyncio)" if p == first else f"Python {p} (× {first} · × asyncio)"
            for p in pythons
        ),
    ]
    lines = [tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)]
    return "\n\n".join(lines + invalid_note(figure, data))


def invalid_note(figure: Figure, data: dict[str, Figures]) -> list[str]:
    """Why the "invalid" cells have no figure: a sentence for a saturated peer, one per other
    reason."""
    saturated: dict[Row, list[str]] = {}
    other = []
    for python, figures in data.items():
        for row, (_, _, status, why) in figures[figure.name].items():
            if status == "invalid" and "saturated its core" in why:
                saturated.setdefault(row, []).append(python)
            elif status == "invalid":
                first = why.splitlines()[0] if why else "invalid"
                other.append(f"*invalid*, no figure for {_label(row)} on {python}: {first}.")
    if not saturated:
        return other
    cells = ", ".join(
        f"{_label(row)} on " + ("every interpreter" if len(on) == len(data) else " and ".join(on))
        for row, on in sorted(saturated.items(), key=lambda item: _order(item[0]))
    )
    peer = (
        f"*invalid*, no figure: the peer saturated its core before the process under test did "
        f"({cells}), so the number would measure the peer, not the loop."
    )
    return [peer, *other]


def oldest(data: dict[str, Figures]) -> str | None:
    """The interpreter every ratio is read against: the reference where measured, else the
    oldest measured."""
    return REFERENCE if REFERENCE in data else next(iter(data), None)


def _order(row: Row) -> tuple:
    return (row.anchor, row.variant != BASELINE, row.variant, row.style)


def _label(row: Row) -> str:
    return row.variant if row.anchor else row.label


def uvloop_sentence(data: dict[str, Figures]) -> str | None:
    """Does uvloop still pay: uvloop-protocol against asyncio-protocol on each interpreter."""
    uv, aio = Row("uvloop-protocol", "native", True), Row("asyncio-protocol", "native", True)
    parts = []
    for python, figures in data.items():
        cost = figures[COST.name]
        if cost.get(uv, (None,))[0] and cost.get(aio, (None,))[0]:
            ratio = cost[aio][0] / cost[uv][0]
            verdict = "uvloop pays" if ratio > 1.05 else "uvloop no longer pays (within 5 %)"
            parts.append(
                f"on {python} asyncio-protocol costs {ratio:.2f}× uvloop-protocol ({verdict})"
            )
    if not parts:
        return None
    return f"**Does uvloop still pay?** At a fixed offered load, {'; '.join(parts)}."


def gain_sentence(data: dict[str, Figures]) -> str | None:
    """What the newest interpreter measured does to each design's fixed-load cost: which
    variant·style gains most and which least (or, when all moved one way, how far)."""
    first = oldest(data)
    newest = list(data)[-1]
    if newest == first or first not in data:
        return None
    old, new = data[first][COST.name], data[newest][COST.name]
    ratios = {
        row: new[row][0] / old[row][0] for row in new if new[row][0] and old.get(row, (None,))[0]
    }
    designs = {row: ratio for row, ratio in ratios.items() if not row.anchor}
    if not designs:
        return None
    cheapest, dearest = min(designs, key=designs.get), max(designs, key=designs.get)
    low, high = f"{designs[cheapest]:.2f}×", f"{designs[dearest]:.2f}×"
    lead = (
        f"**What a newer interpreter changes:** from {first} to {newest}, the cost per "
        "request at a fixed load"
    )
    if designs[cheapest] > 1:
        sentence = (
            f"{lead} rose for every variant·style, least for {cheapest.label} ({low}), most "
            f"for {dearest.label} ({high})"
        )
    elif designs[dearest] < 1:
        sentence = (
            f"{lead} fell for every variant·style, most for {cheapest.label} ({low}), least for "
            f"{dearest.label} ({high})"
        )
    else:
        sentence = (
            f"{lead} fell most for {cheapest.label} ({low}) and rose most for "
            f"{dearest.label} ({high})"
        )
    floor = ratios.get(Row(YARDSTICK, "native", True))
    if floor:  # a C loop: what every row's move holds that is not Python's own
        sentence += f"; {YARDSTICK}, whose loop is C, moved {floor:.2f}×"
    return sentence + "."


def order_sentence(data: dict[str, Figures]) -> str | None:
    """Where the order of the loops (by fixed-load cost, cheapest first) changes."""
    first = oldest(data)
    if first not in data or len(data) < 2:
        return None
    ranks = {}
    for python, figures in data.items():
        cost = {r: v[0] for r, v in figures[COST.name].items() if not r.anchor and v[0]}
        ranks[python] = {row: i for i, row in enumerate(sorted(cost, key=cost.get), 1)}
    moves = []
    for python in data:
        if python == first:
            continue
        common = set(ranks[python]) & set(ranks[first])
        before = {r: i for i, r in enumerate(sorted(common, key=ranks[first].get), 1)}
        after = {r: i for i, r in enumerate(sorted(common, key=ranks[python].get), 1)}
        moved = [
            f"{r.label} #{before[r]} → #{after[r]}"
            for r in sorted(common, key=after.get)
            if before[r] != after[r]
        ]
        moves.append(f"on {python}, " + (", ".join(moved) if moved else "the same order"))
    return (
        f"**Where the order changes** (fixed-load cost, cheapest first, against {first}): "
        + "; ".join(moves)
        + "."
    )


def chart(data: dict[str, Figures], path: Path) -> Path | None:
    """A dot plot of the fixed-load cost: a line per row, a marker per interpreter."""
    rows = sorted(
        {r for figures in data.values() for r, v in figures[COST.name].items() if v[0]}, key=_order
    )
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.4))
    for python, marker in zip(data, "os^D", strict=False):
        cost = data[python][COST.name]
        ys = [i for i, row in enumerate(rows) if cost.get(row, (None,))[0]]
        axis.scatter([cost[rows[i]][0] for i in ys], ys, marker=marker, label=f"Python {python}")
    axis.set_yticks(range(len(rows)), [_label(row) for row in rows], fontsize=8)
    axis.invert_yaxis()
    axis.set_xlabel("server CPU per request at a fixed offered load (µs), lower is better")
    axis.grid(axis="x", alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def unavailable_on(stores_by_python: dict[str, dict]) -> dict[str, dict[str, str]]:
    """Per interpreter, the variants its sessions recorded as unavailable there, with why."""
    found: dict[str, dict[str, str]] = {}
    for python, stores in stores_by_python.items():
        for store in filter(None, stores.values()):
            for session in store.sessions.values():
                found.setdefault(python, {}).update(session["environment"].get("unavailable", {}))
    return found


def section(page) -> list[str]:
    """The section's lines: what is stored on which interpreter, a table per figure, a chart."""
    stores = {
        p: page.stores if p == page.python else _stores(page.results, page.mode, p) for p in PYTHONS
    }
    data = read(page.results, page.mode, page.stores, page.points_of, page.python)
    lines = [f"## {TITLE}", "", intro(page.python, oldest(data) or page.python), ""]
    missing = [p for p in PYTHONS if p not in data]
    if missing:
        lines += [
            f"No results stored yet on Python {', '.join(missing)}"
            + (" (only " + ", ".join(data) + " has)" if data else "")
            + f": measure with `{MEASURE}` (each interpreter other than the one running the "
            "bench gets its own virtualenv under `.venvs/`).",
            "",
        ]
    if not data:
        return lines
    unavailable = unavailable_on(stores)
    notes = [
        f"- `{name}` is unavailable on Python {python}: {why}"
        for python in data
        for name, why in sorted(unavailable.get(python, {}).items())
    ]
    lines += [*notes, ""] if notes else []
    for figure in FIGURES:
        lines += [f"### {figure.title}", "", table(figure, data, unavailable), ""]
    path = chart(data, page.chart_dir / f"{page.mode}-interpreters-echo-cost.png")
    if path is not None:
        caption = "Echo server CPU per request at a fixed offered load, by interpreter"
        lines += [
            f"![{caption}]({path.relative_to(page.out.parent).as_posix()})",
            "",
            f"*{caption}*",
            "",
        ]
    for sentence in (uvloop_sentence(data), gain_sentence(data), order_sentence(data)):
        if sentence:
            lines += [sentence, ""]
    return lines


def intro(main: str, first: str) -> str:
    return (
        f"The same rows on each CPython the lab supports ({', '.join(PYTHONS)}), each "
        f"interpreter's results stored apart and never mixed in one table; the tables above are "
        f"Python {main}'s. Every cell is the median, then its ratio to the same row on {first} "
        "and to asyncio measured in the same session on the same interpreter. The process under "
        "test runs on the interpreter of its column; the peers (the echo load generator, the "
        "crawler's site server) run on the interpreter running the bench, alike for every column."
    )
