"""The "Interpreters" section: the same rows on every CPython measured, read side by side.

For each figure of :mod:`bench.interpreter_figures`, a table with a row per variant·style and
a column per interpreter, each row's change read against its own session's controls
(:mod:`bench.render.drift`), never across sessions as it stands; a chart of that relative cost, and
sentences from the same data. A change is read only within one build family (pyenv's, Debian's),
since the build is part of what is compared. ``bench/README.md``, "The interpreter dimension", and
``machine/README.md``, "Every Python", say how the interpreters are measured and stored.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tabulate import tabulate

from bench import registry
from bench.interpreter_figures import COST, FIGURES, Figure
from bench.plan import BASELINE, USER_BASE, YARDSTICK, Row
from bench.render.drift import ONE_REPETITION, Change, level, level_error, relative_change
from bench.render.intervals import CONFIDENCE, KINDS, MARGIN, WITHIN, kind, ratio_interval, word
from bench.render.rows import RenderedRow, stored_points
from bench.render.tables import session_said
from bench.store import load_mode
from machine.environment import describe, same_machine
from machine.interpreters import BUILDS, DEBIAN, REFERENCE, family, version_of

TITLE = "Interpreters"
MEASURE = " ".join(["python -m bench run --across", *(f"--python {v}" for v in BUILDS)])


@dataclass(frozen=True)
class Cell:
    """One row's figure on one interpreter, with its session's controls."""

    values: tuple[float, ...]  # the row's valid repetitions of the figure (empty: no figure)
    status: str  # "ok", or why there is no figure ("invalid", "not measured", ...)
    why: str = ""  # the reason behind a status other than ok
    session: str = ""
    # Each control row's repetitions of the figure in the row's own session.
    controls: tuple[tuple[float, ...], ...] = ()
    control: bool = False  # the row is one of its session's controls
    # Relative standard errors where a figure is one repetition holding a harness's repeats
    # (pyperf's): the row's, then each control's (None: not known).
    error: float | None = None
    control_errors: tuple[float | None, ...] = ()
    stale: bool = False  # measured on code that has changed since (‡): no change is read
    # The same values under their rounds (bench.summary.by_round): a same-session ratio pairs them
    rounds: Mapping[int, float] | None = field(default=None, compare=False)

    @property
    def paired(self) -> Mapping[int, float] | list[float]:
        """What a ratio takes: values by round where known, else the values."""
        return self.rounds or list(self.values)

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def relative(self) -> float | None:
        """The median over its session's control level."""
        base = level(self.controls)
        return self.median / base if self.median and base else None


MISSING = Cell((), "not measured")
# python -> figure name -> row -> its cell
Figures = dict[str, dict[str, dict[Row, Cell]]]


def read(
    results: Path | None, mode: str, main: dict, main_points, main_python: str = REFERENCE
) -> dict[str, Figures]:
    """Per interpreter (those with results stored), per figure: each row's cell."""
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


def _figure(figure: Figure, points: list[tuple[dict, list[RenderedRow]]]) -> dict[Row, Cell]:
    rows = next((rows for params, rows in points if figure.matches(params)), [])
    return {rendered.row: cell(rendered, figure.metric) for rendered in rows}


def cell(rendered: RenderedRow, metric: str) -> Cell:
    """A rendered row's figure and its session's controls, as a cell of this section."""
    summary = rendered.summary
    values = tuple(summary.values.get(metric, ())) if summary.status == "ok" else ()
    status = summary.status if summary.status != "ok" else ("ok" if values else "n/a")
    measured = [c for c in rendered.controls.values() if c is not None and c.status == "ok"]
    return Cell(
        values,
        status,
        summary.reason if summary.status != "ok" else "",
        rendered.session,
        tuple(tuple(control.values.get(metric, ())) for control in measured),
        rendered.row.key in rendered.controls,
        summary.relative_error.get(metric),
        tuple(control.relative_error.get(metric) for control in measured),
        rendered.stale,
        summary.rounds.get(metric) if values else None,
    )


def change(figure: Figure, new: Cell, old: Cell) -> Change | None:
    """A row's change from `old` to `new`, each against its own session's controls; None
    where either is a control or was measured on code that has changed since (the change
    would mix the interpreter's effect with the code's)."""
    if new.control or old.control:
        return None  # a control against its own level: not a finding
    if new.stale or old.stale:
        return None
    errors = (new.error, level_error(new.control_errors), old.error,
              level_error(old.control_errors))  # fmt: skip
    return relative_change(
        new.values, new.controls, old.values, old.controls, figure.higher_is_better, errors
    )


def _changed(ratio: Change | None) -> str:
    if ratio is None:
        return "–"
    value, low, high, said = ratio
    if low is None:
        return f"{value:.2f}×, {said}"
    return f"{value:.2f}× [{low:.2f}–{high:.2f}] {said}"


def table(
    figure: Figure,
    data: dict[str, Figures],
    unavailable: dict[str, dict],
    names: dict[str, str] | None = None,
) -> str:
    """One figure: a row per variant·style, a column per interpreter with the row's median
    and, beside the oldest of the column's own build family, its change relative to each
    session's controls; then why a cell says "invalid"."""
    names = names or {}
    pythons = list(data)
    firsts = {p: oldest(in_family(data, p)) for p in pythons}
    rows = sorted({row for p in pythons for row in data[p][figure.name]}, key=_order)
    body = []
    for row in rows:
        cells = [_label(row)]
        for python in pythons:
            here = data[python][figure.name].get(row, MISSING)
            status = here.status
            if here.median is None and row.variant in unavailable.get(python, {}):
                status = "unavailable"
            if here.median is None:
                cells.append(status)
                continue
            text = f"{here.median:,.{figure.digits}f}" + ("‡" if here.stale else "")
            if here.control:
                cells.append(f"{text} (control)")
                continue
            first = firsts[python]
            if python == first:
                cells.append(text)
                continue
            old = data[first][figure.name].get(row, MISSING)
            ratio = change(figure, here, old)
            cells.append(f"{text} · {_changed(ratio)}")
        body.append(cells)

    def header(python: str) -> str:
        name, first = names.get(python, f"Python {python}"), firsts[python]
        if python == first:
            return name
        return f"{name} (change against {names.get(first, first)})"

    headers = ["row", *(header(p) for p in pythons)]
    lines = [tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)]
    if any(cell.stale for p in pythons for cell in data[p][figure.name].values()):
        lines.append(
            "‡ measured on code that has changed since: no change is read against it "
            "(`python -m bench run --across` measures it again)."
        )
    return "\n\n".join(lines + invalid_note(figure, data))


def invalid_note(figure: Figure, data: dict[str, Figures]) -> list[str]:
    """Why the "invalid" cells have no figure: a sentence for a saturated peer, one per other
    reason."""
    saturated: dict[Row, list[str]] = {}
    other = []
    for python, figures in data.items():
        for row, here in figures[figure.name].items():
            status, why = here.status, here.why
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
        "latest session",
    ]
    return tabulate(body, headers=headers, tablefmt="github", disable_numparse=True)


def _when(environment: dict) -> str:
    """When an interpreter's latest session ran."""
    return str(environment.get("date", "?"))[:16].replace("T", " ")


def ran_in(data: dict, envs: dict[str, dict], names: dict[str, str]) -> str:
    """Where each interpreter's latest session ran: the machine and the commit, for every table
    of the section (each column one interpreter's)."""
    said = [
        f"{names[p]}: {session_said(envs[p].get('session', '?'), envs[p])}"
        for p in data
        if p in envs
    ]
    return f"*Ran in:* {'; '.join(said)}."


def build_sentence(data: dict[str, Figures], envs: dict[str, dict]) -> str | None:
    """What the build alone moves: one version from two families (pyenv's 3.13 and Debian's),
    the fixed-load cost of every row both measured in one session, Debian's over pyenv's. The
    build moves the controls too, so this ratio is taken as it stands, and only inside one
    session; measured in two, the sentence says so and gives no figure."""
    pairs = [(p, f"{DEBIAN}-{p}") for p in data if not family(p) and f"{DEBIAN}-{p}" in data]
    if not pairs:
        return None
    own, debian = pairs[-1]
    mine, theirs = data[own][COST.name], data[debian][COST.name]
    both = [
        row
        for row in sorted(theirs, key=_order)
        if theirs[row].median and mine.get(row, MISSING).median
        and theirs[row].session == mine[row].session
    ]  # fmt: skip
    exact = [envs.get(p, {}).get("python", version_of(p)) for p in (own, debian)]
    builder = build_family(own, envs.get(own, {}))
    whose = f"{builder}'s " if builder in ("pyenv", "own build") else ""
    lead = f"**What the build moves:** the same rows on {whose}{exact[0]} and Debian's {exact[1]}"
    if not both:
        return (
            f"{lead} were not measured in one session, so no figure compares them (a machine "
            f"drifts between sessions): `python -m bench run --across --python {own} "
            f"--python {debian}` measures both in interleaved rounds."
        )
    changes = {
        row: found
        for row in both
        if (found := ratio_interval(theirs[row].paired, mine[row].paired))
    }
    if not changes:
        return f"{lead}: one repetition a row, so no interval and no figure."
    said = {row: kind(word(r, higher_is_better=False)) for row, r in changes.items()}
    ratios = sorted(r[0] for r in changes.values())
    counts = ", ".join(
        f"{sum(1 for w in said.values() if w == each)} {each}"
        for each in KINDS
        if each in said.values()
    )
    same = "" if exact[0] == exact[1] else (
        f"; the patch releases differ too ({exact[0]} and {exact[1]}), so the ratio holds both"
    )  # fmt: skip
    return (
        f"{lead}, measured in one session in interleaved rounds: at a fixed offered load, "
        f"Debian's costs {statistics.median(ratios):.2f}× per request (median over "
        f"{len(ratios)} rows, from {ratios[0]:.2f}× to {ratios[-1]:.2f}×; by each row's "
        f"interval: {counts}){same}. Here the controls move with the build, so this is the "
        "one comparison of this section taken as it stands."
    )


def _order(row: Row) -> tuple:
    return (row.anchor, row.variant != BASELINE, row.variant, row.style)


def _label(row: Row) -> str:
    return row.variant if row.anchor else row.label


def uvloop_sentence(data: dict[str, Figures], names: dict[str, str] | None = None) -> str | None:
    """Does uvloop still pay: uvloop-protocol against asyncio-protocol on each interpreter,
    inside one session, worded from the ratio's interval."""
    names = names or {}
    uv, aio = Row(YARDSTICK, "native", True), Row(USER_BASE, "native", True)
    parts = []
    for python, figures in data.items():
        cost = figures[COST.name]
        mine, theirs = cost.get(aio, MISSING), cost.get(uv, MISSING)
        if len(mine.values) < 2 or len(theirs.values) < 2 or mine.session != theirs.session:
            continue
        ratio = ratio_interval(mine.paired, theirs.paired)
        said = word(ratio, higher_is_better=False)
        verdict = {
            "dearer": "uvloop pays",
            "cheaper": "uvloop costs more",
            WITHIN: f"uvloop does not pay: the two are within {MARGIN:.0%}",
        }.get(kind(said), f"whether uvloop pays: {said}")
        parts.append(
            f"on {names.get(python, python)} asyncio-protocol costs {ratio[0]:.2f}× "
            f"[{ratio[1]:.2f}–{ratio[2]:.2f}] uvloop-protocol ({verdict})"
        )
    if not parts:
        return None
    return f"**Does uvloop still pay?** At a fixed offered load, {'; '.join(parts)}."


def changes(data: dict[str, Figures], figure: Figure, newer: str, older: str) -> dict:
    """Per non-control row on both: its change from `older` to `newer` (bench.render.drift)."""
    old, new = data[older][figure.name], data[newer][figure.name]
    found = {}
    for row in sorted(new.keys() & old.keys(), key=_order):
        ratio = change(figure, new[row], old[row])
        if ratio is not None:
            found[row] = ratio
    return found


def gain_sentence(data: dict[str, Figures], names: dict[str, str] | None = None) -> str | None:
    """What the newest interpreter of a family does to each row's fixed-load cost relative to
    its session's controls: how many rows changed which way, and the largest move each way."""
    names = names or {}
    first, newest = oldest(data), list(data)[-1]
    if first is None or newest == first:
        return None
    moved = changes(data, COST, newest, first)
    if not moved:
        return None
    said = {each: [row for row, r in moved.items() if kind(r[3]) == each]
            for each in (*KINDS, ONE_REPETITION)}  # fmt: skip
    counts = ", ".join(
        f"{len(rows)} {'with ' if each == ONE_REPETITION else ''}{each}"
        for each, rows in said.items()
        if rows
    )
    sentence = (
        f"**What a newer interpreter changes:** from {names.get(first, first)} to "
        f"{names.get(newest, newest)}, each row's cost per request at a fixed load against "
        f"its own session's controls: {counts} (of {len(moved)} rows, by each row's interval)"
    )
    extremes = []
    if said["cheaper"]:
        row = min(said["cheaper"], key=lambda r: moved[r][0])
        extremes.append(f"most cheaper {row.label} ({_changed(moved[row])})")
    if said["dearer"]:
        row = max(said["dearer"], key=lambda r: moved[r][0])
        extremes.append(f"most dearer {row.label} ({_changed(moved[row])})")
    if extremes:
        sentence += "; " + ", ".join(extremes)
    return (
        sentence + ". A move every row shares, the controls' included, cancels here: this "
        "reads where a design gains or loses against the servers users write on that "
        "interpreter, not how fast the interpreter is."
    )


def chart(data: dict[str, Figures], path: Path, names: dict[str, str] | None = None):
    """The fixed-load cost of each row over its own session's control level, a marker per
    interpreter, rows sorted by their median over the interpreters; None with fewer than two
    interpreters (a chart of one would read as a comparison it is not)."""
    names = names or {}
    drawn = {p: figures[COST.name] for p, figures in data.items()}
    drawn = {p: cost for p, cost in drawn.items() if any(c.relative for c in cost.values())}
    if len(drawn) < 2:
        return None
    rows = [r for r in {r for cost in drawn.values() for r, c in cost.items() if c.relative}]
    # cheapest first, by the row's median over the interpreters that measured it
    rows.sort(
        key=lambda r: (
            statistics.median(
                c.relative for cost in drawn.values() if (c := cost.get(r)) and c.relative
            ),
            _order(r),
        )
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8.5, 0.34 * len(rows) + 1.8))
    for python, marker in zip(drawn, "os^Dv<>p", strict=False):
        cost = drawn[python]
        ys = [i for i, row in enumerate(rows) if cost.get(row, MISSING).relative]
        axis.scatter(
            [cost[rows[i]].relative for i in ys], ys, marker=marker, label=names.get(python, python)
        )
    axis.axvline(1, color="grey", linestyle="--", linewidth=1, label="its session's controls")
    stale = {row for cost in drawn.values() for row, c in cost.items() if c.stale}
    labels = [_label(row) + ("‡" if row in stale else "") for row in rows]  # changed code
    axis.set_yticks(range(len(rows)), labels, fontsize=8)
    axis.invert_yaxis()
    axis.set_title(
        "Echo server CPU per request at a fixed offered load, against each session's controls",
        fontsize=10,
    )
    axis.set_xlabel(
        "cost ÷ the geometric mean of asyncio-protocol, uvloop-protocol and selectors-floor "
        "(same session); lower is cheaper",
        fontsize=8,
    )
    axis.grid(axis="x", alpha=0.3)
    axis.legend(fontsize=8, title="interpreter", title_fontsize=8)
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
    """The section's lines: what is stored on which interpreter, a table per figure, a chart,
    the sentences."""
    stores = {
        p: page.stores if p == page.python else _stores(page.results, page.mode, p) for p in BUILDS
    }
    data = read(page.results, page.mode, page.stores, page.points_of, page.python)
    lines = [f"## {TITLE}", "", *intro(page.python), ""]
    missing = [p for p in BUILDS if p not in data]
    if missing:
        lines += [
            f"No results stored yet on Python {', '.join(missing)}"
            + (" (only " + ", ".join(data) + " has)" if data else "")
            + f": measure with `{MEASURE}` (each interpreter other than the one running the "
            "bench gets its own virtualenv under `.venvs/`).",
            "",
        ]
    envs = environments(stores)
    data, elsewhere = on_this_machine(data, envs, page.python)
    lines += elsewhere
    if len(data) < 2:  # one interpreter compares with nothing: its figures are the tables above
        return lines
    unavailable = unavailable_on(stores)
    names = column_names(data, envs)
    lines += [*unavailable_notes(data, unavailable, names), ""]
    lines += [builds_table(data, envs, names), "", ran_in(data, envs, names), ""]
    for figure in FIGURES:
        lines += [f"### {figure.title}", "", table(figure, data, unavailable, names), ""]
    path = chart(data, page.chart_dir / f"{page.mode}-interpreters-echo-cost.png", names)
    if path is not None:
        caption = (
            "Echo server CPU per request at a fixed offered load, each row over its own "
            "session's controls, by interpreter"
        )
        lines += [
            f"![{caption}]({path.relative_to(page.out.parent).as_posix()})",
            "",
            f"*{caption}*",
            "",
        ]
    sentences = [uvloop_sentence(data, names), build_sentence(data, envs)]
    for part in families(data):  # a newer interpreter against an older one of its own build
        sentences.append(gain_sentence(part, names))
    lines += [line for sentence in sentences if sentence for line in (sentence, "")]
    return lines


def on_this_machine(
    data: dict[str, Figures], envs: dict[str, dict], main: str
) -> tuple[dict[str, Figures], list[str]]:
    """The interpreters whose latest session ran on the main tables' machine (a page sets no
    two machines' figures side by side), and a paragraph naming the others ([] if none)."""
    if main not in envs:
        return data, []
    here = describe(envs[main])
    away = {
        p: describe(envs[p]) for p in data if p in envs and not same_machine(envs[p], envs[main])
    }
    if not away:
        return data, []
    by_machine: dict[str, list[str]] = {}
    for python, machine in away.items():
        by_machine.setdefault(machine, []).append(python)
    said = "; ".join(f"{', '.join(ps)} on {machine}" for machine, ps in by_machine.items())
    return {p: v for p, v in data.items() if p not in away}, [
        f"Measured on another machine than this page's ({here}), so not set beside its "
        f"figures: {said}. `{MEASURE}` measures them here.",
        "",
    ]


def unavailable_notes(
    data: dict[str, Figures], unavailable: dict[str, dict[str, str]], names: dict[str, str]
) -> list[str]:
    """One line per reason a variant cannot run, naming every interpreter it holds on."""
    where: dict[tuple[str, str], list[str]] = {}
    for python in data:
        for name, why in sorted(unavailable.get(python, {}).items()):
            where.setdefault((why, python), []).append(name)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (why, python), variants in where.items():
        grouped.setdefault((why, tuple(variants)), []).append(names.get(python, python))
    return [
        f"- {', '.join(f'`{v}`' for v in variants)} unavailable on {', '.join(pythons)}: {why}"
        for (why, variants), pythons in grouped.items()
    ]


def intro(main: str) -> list[str]:
    """Two short paragraphs: what is measured where, and how a cell is read."""
    return [
        f"The same rows on each CPython the lab compares ({', '.join(BUILDS)}: this machine's "
        "pyenv builds and Debian's, from the root `python3 -m nox -s pythons` makes), each "
        f"interpreter's results stored apart; the tables above are Python {main}'s. The process "
        "under test runs on the interpreter of its column; the peers (the echo load generator, "
        "the crawler's site server) run on the interpreter running the bench, alike for every "
        "column.",
        "",
        "A cell is the row's median, then its change against the oldest interpreter of its "
        "build family: the row over its own session's controls (echo: "
        f"{', '.join(c.split('/')[0] for c in registry.get('echo').controls)}; elsewhere the "
        "asyncio row in its style), new over "
        f"old, with a {CONFIDENCE:.0%} t-interval on the log scale (bench/uncertainty.py) and "
        f"what it says: cheaper or dearer where it excludes 1, within ±{MARGIN:.0%}, or can't "
        "tell. A move "
        "every row shares, the controls' too, cancels: so does the machine's drift between "
        "sessions, and so does an interpreter that speeds every row alike.",
    ]
