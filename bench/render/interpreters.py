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

A build is part of what is compared: pyenv's interpreters here are configured with
``--enable-shared`` and no PGO or LTO, Debian builds its own way, so a ratio across interpreters
is read only within one build family (a Debian column against Debian's oldest, a pyenv column
against the reference), every column names its family, a table gives each interpreter's exact
version and build flags (``sysconfig``'s ``CONFIG_ARGS``, stored with every session), and one
sentence says what the build alone moves: the same version (3.13) from both families.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from tabulate import tabulate

from bench import registry
from bench.interpreter_figures import COST, FIGURES, Figure
from bench.interpreters import BUILDS, DEBIAN, REFERENCE, family, version_of
from bench.plan import BASELINE, YARDSTICK, Row
from bench.render.rows import RenderedRow, stored_points
from bench.store import load_mode

TITLE = "Interpreters"
MEASURE = " ".join(["python -m bench run --across", *(f"--python {v}" for v in BUILDS)])
# python -> figure -> row -> (median, same-session asyncio median, status, why no figure)
Figures = dict[str, dict[str, dict[Row, tuple[float | None, float | None, str, str]]]]


def read(
    results: Path | None, mode: str, main: dict, main_points, main_python: str = REFERENCE
) -> dict[str, Figures]:
    """Per interpreter (those with results stored), per figure: each row's (median, its
    same-session asyncio median, status, why no figure)."""
    found: dict[str, Figures] = {}
    for python in BUILDS:
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


def table(
    figure: Figure,
    data: dict[str, Figures],
    unavailable: dict[str, dict],
    names: dict[str, str] | None = None,
) -> str:
    """One figure: a row per variant·style, a column per interpreter with its ratios (to the
    oldest of its own build family, and to asyncio in its own session), then why a cell says
    "invalid". `names`: each interpreter's column name with its build family."""
    names = names or {}
    pythons = list(data)
    firsts = {p: oldest(in_family(data, p)) for p in pythons}
    rows = sorted({row for p in pythons for row in data[p][figure.name]}, key=_order)
    body = []
    for row in rows:
        cells = [_label(row)]
        for python in pythons:
            first = firsts[python]
            reference = data.get(first, {}).get(figure.name, {}).get(row, (None,))[0]
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

    def header(python: str) -> str:
        name, first = names.get(python, f"Python {python}"), firsts[python]
        if python == first:
            return f"{name} (× asyncio)"
        return f"{name} (× {names.get(first, first)} · × asyncio)"

    headers = ["row", *(header(p) for p in pythons)]
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


def in_family(data: dict, python: str) -> dict:
    """The interpreters of `python`'s build family, in `data`'s order."""
    return {p: v for p, v in data.items() if family(p) == family(python)}


def families(data: dict) -> list[dict]:
    """`data` split by build family (this machine's own builds first, then Debian's)."""
    return [
        part for f in ("", DEBIAN) if (part := {p: v for p, v in data.items() if family(p) == f})
    ]


def column_names(data: dict, environments: dict[str, dict]) -> dict[str, str]:
    """Each interpreter's column name with its build family: "pyenv 3.13", "Debian 3.14"."""
    return {p: f"{build_family(p, environments.get(p, {}))} {version_of(p)}" for p in data}


def build_family(python: str, environment: dict) -> str:
    """Who built an interpreter: Debian (the root's), pyenv (a prefix under .pyenv), or, when
    its stored sessions do not say, "Python" (results stored before build flags were)."""
    if family(python) == DEBIAN:
        return "Debian"
    args = environment.get("python_config_args")
    if args is None:
        return "Python"
    return "pyenv" if "/.pyenv/" in args else "own build"


# The configure options that shape an interpreter's speed, as CONFIG_ARGS spells them.
SPEED_FLAGS = (
    "--enable-optimizations",  # PGO
    "--with-lto",
    "--enable-shared",  # libpython as a shared library: calls into it go through the PLT
    "--with-computed-gotos",
    "--enable-experimental-jit",
    "--with-tail-call-interp",
    "--enable-bolt",
    "--disable-gil",
    "--with-pydebug",
)


def build_flags(args: str | None) -> str:
    """The speed-shaping configure options (SPEED_FLAGS) an interpreter was built with."""
    if args is None:
        return "not recorded"
    words = [word.strip("'") for word in args.split()]
    flags = [word for word in words if word.split("=")[0] in SPEED_FLAGS]
    return " ".join(f"`{flag}`" for flag in flags) or "none of them"


def environments(stores_by_python: dict[str, dict]) -> dict[str, dict]:
    """Per interpreter, the environment of its latest stored session, with that session's
    name under "session"."""
    found: dict[str, dict] = {}
    for python, stores in stores_by_python.items():
        sessions = [
            {**s["environment"], "session": name}
            for store in filter(None, stores.values())
            for name, s in store.sessions.items()
        ]
        if sessions:
            found[python] = max(sessions, key=lambda env: env.get("date", ""))
    return found


def builds_table(data: dict, envs: dict[str, dict], names: dict[str, str]) -> str:
    """Each interpreter measured: its exact version and its build flags."""
    body = [
        [
            names[p],
            envs.get(p, {}).get("python", "?"),
            build_flags(envs.get(p, {}).get("python_config_args")),
            _when(envs.get(p, {})),
        ]
        for p in data
    ]
    headers = [
        "interpreter",
        "exact version",
        "configure options that shape speed",
        "latest session (load average)",
    ]
    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)


def _when(environment: dict) -> str:
    """When an interpreter's latest session ran, and how loaded the machine was then."""
    load = environment.get("load_average")
    date = str(environment.get("date", "?"))[:16].replace("T", " ")
    cores = environment.get("logical_cores", "?")
    return f"{date} ({load[0]:.1f} on {cores} cores)" if load else date


def build_sentence(data: dict[str, Figures], envs: dict[str, dict]) -> str | None:
    """What the build alone moves: one version from two families (pyenv's 3.13 and Debian's),
    the fixed-load cost of every row measured on both, Debian's over pyenv's."""
    pairs = [(p, f"{DEBIAN}-{p}") for p in data if not family(p) and f"{DEBIAN}-{p}" in data]
    if not pairs:
        return None
    own, debian = pairs[-1]
    mine, theirs = data[own][COST.name], data[debian][COST.name]
    ratios = sorted(
        theirs[r][0] / mine[r][0] for r in theirs if theirs[r][0] and mine.get(r, (None,))[0]
    )
    if not ratios:
        return None
    exact = [envs.get(p, {}).get("python", version_of(p)) for p in (own, debian)]
    same = "" if exact[0] == exact[1] else (
        f"; the patch releases differ too ({exact[0]} and {exact[1]}), so the ratio holds both"
    )  # fmt: skip
    sessions = [envs.get(p, {}).get("session") for p in (own, debian)]
    if sessions[0] != sessions[1]:  # not one session: the machine's state is in the ratio too
        when = " and ".join(str(envs.get(p, {}).get("date", "?"))[:16] for p in (own, debian))
        same += f"; measured in different sessions ({when}), so it holds the machine's load too"
    builder = build_family(own, envs.get(own, {}))
    whose = f"{builder}'s " if builder in ("pyenv", "own build") else ""
    return (
        f"**What the build moves:** the same rows on {whose}{exact[0]} and Debian's "
        f"{exact[1]}: at a fixed offered load, Debian's costs "
        f"{statistics.median(ratios):.2f}× per request (median over {len(ratios)} rows, from "
        f"{ratios[0]:.2f}× to {ratios[-1]:.2f}×){same}."
    )


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
            verdict = (
                "uvloop pays"
                if ratio > 1.05
                else "uvloop costs more"
                if ratio < 0.95
                else "uvloop no longer pays: within 5 %"
            )
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
    for python, marker in zip(data, "os^Dv<>p", strict=False):
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
        p: page.stores if p == page.python else _stores(page.results, page.mode, p) for p in BUILDS
    }
    data = read(page.results, page.mode, page.stores, page.points_of, page.python)
    lines = [f"## {TITLE}", "", intro(page.python, oldest(data) or page.python), ""]
    missing = [p for p in BUILDS if p not in data]
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
    envs = environments(stores)
    names = column_names(data, envs)
    lines += [builds_table(data, envs, names), ""]
    for figure in FIGURES:
        lines += [f"### {figure.title}", "", table(figure, data, unavailable, names), ""]
    path = chart(data, page.chart_dir / f"{page.mode}-interpreters-echo-cost.png")
    if path is not None:
        caption = "Echo server CPU per request at a fixed offered load, by interpreter"
        lines += [
            f"![{caption}]({path.relative_to(page.out.parent).as_posix()})",
            "",
            f"*{caption}*",
            "",
        ]
    sentences = [uvloop_sentence(data), build_sentence(data, envs)]
    for part in families(data):  # a newer interpreter against an older one of its own build
        sentences += [gain_sentence(part), order_sentence(part)]
    lines += [line for sentence in sentences if sentence for line in (sentence, "")]
    return lines


def intro(main: str, first: str) -> str:
    return (
        f"The same rows on each CPython the lab compares ({', '.join(BUILDS)}: this machine's "
        "pyenv builds and Debian's, from the root `python3 -m nox -s pythons` makes), each "
        f"interpreter's results stored apart and never mixed in one table; the tables above are "
        f"Python {main}'s. Every cell is the median, then its ratio to the same row on the "
        f"oldest interpreter of its own build family ({first} for pyenv's, Debian's 3.13 for "
        "Debian's) and to asyncio measured in the same session on the same interpreter. The "
        "process under test runs on the interpreter of its column; the peers (the echo load "
        "generator, the crawler's site server) run on the interpreter running the bench, alike "
        "for every column."
    )
