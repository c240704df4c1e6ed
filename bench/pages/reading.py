"""Every README's rendered blocks: no figure in a README is typed by hand.

A figure sits between ``<!-- figures:NAME -->`` and ``<!-- /figures -->``, and ``python -m bench
report`` replaces what is between them with :func:`blocks`' text for NAME: from the committed
cost anatomy (``reports/results/anatomy.json``, with its point and date), from the workloads'
registrations (the run plan) or from the code (the loops' sizes). The ``designs`` and ``io``
tables are rendered from each variant's declarations (``loops/contract.py``); a variant that
cannot load here keeps the row the block already has. ``tests/test_designs.py`` holds every
block to what this module renders and every README to having no figure outside a block.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import loops
from bench.pages.plan_text import plan
from bench.plan import FLOOR, USER_BASE, YARDSTICK, Metric
from bench.render.codesize import asyncio_api_files, loop_and_asyncio_api, loop_files
from bench.store import stored_points
from bench.studies.anatomy.render import cpu_us, load_anatomy
from bench.summary import summarize
from loops.contract import DECLARED_KEYS
from machine.environment import ROOT

BLOCK = re.compile(r"<!-- figures:([\w:.-]+) -->(.*?)<!-- /figures -->", re.S)
COMMAND = "`python -m bench anatomy`"


def pages(root: Path = ROOT) -> list[Path]:
    """The Markdown files of the reading path that may hold blocks."""
    return [root / "loops" / "README.md", *sorted((root / "loops").glob("*/README.md"))]


def readmes(root: Path = ROOT) -> list[Path]:
    """Every README of the tree: each may hold blocks, and none may hold a figure outside one."""
    found = (
        p for p in root.rglob("README.md") if not any(part.startswith(".") for part in p.parts)
    )
    return sorted(p for p in found if "reports" not in p.relative_to(root).parts)


# -- the figures, from the cost anatomy ------------------------------------------------------


def _row(data: dict, name: str) -> dict:
    """The anatomy's row for an anchor, a loop in a style ("asyncio/coroutines"), or a loop in
    its first style of coroutines, callbacks, generators."""
    rows = data["rows"]
    if "/" in name:
        return rows[name]
    styles = ("native", "coroutines", "callbacks", "generators", "blocking")
    for key in (f"{name}/{style}" for style in styles):
        if key in rows:
            return rows[key]
    raise KeyError(f"no row for {name} in the stored anatomy")


def _when(data: dict) -> str:
    point = data["point"]
    return (
        f"{point['size'] // 1024} KiB × {point['connections']} connections at "
        f"{point['rate']:,.0f} requests/s offered, counted by {COMMAND} on {data['date'][:10]}"
    )


def _cpu(entry: dict) -> str:
    return f"{cpu_us(entry):.1f} µs"


def _ratio(entry: dict, base: dict) -> str:
    return f"{cpu_us(entry) / cpu_us(base):.2f}×"


def home_made(root: Path = ROOT) -> list[str]:
    """The home-made loops whose folder is under root/loops: each README ends with its cost."""
    found = loops.discover()
    return [n for n, v in found.items() if not v.reference and (root / "loops" / n).is_dir()]


def cost(data: dict, name: str) -> str:
    """One loop's cost against the two control rows, for the end of its README."""
    if not any(key.split("/")[0] == name for key in data["rows"]):
        return f"(not counted yet: `python -m bench anatomy --loop {name}` counts it)"
    entry, protocol, yard = _row(data, name), _row(data, USER_BASE), _row(data, YARDSTICK)
    return (
        f"{_cpu(entry)} of server CPU and {entry['syscalls']['total']:.2f} syscalls per echo "
        f"request ({_ratio(entry, protocol)} {USER_BASE}'s {_cpu(protocol)}, "
        f"{_ratio(entry, yard)} {YARDSTICK}'s {_cpu(yard)}; {_when(data)})"
    )


def drained(data: dict, name: str) -> str:
    """Syscalls and failed receives per request now, beside uvloop's Protocol server."""
    entry, yard = _row(data, name)["syscalls"], _row(data, YARDSTICK)["syscalls"]
    return (
        f"{entry['total']:.2f} syscalls per request, {entry['recv_eagain']:.2f} of them failed "
        f"recvs and {entry['epoll_ctl']:.2f} `epoll_ctl` ({YARDSTICK}: {yard['total']:.2f}, "
        f"{yard['recv_eagain']:.2f} and {yard['epoll_ctl']:.2f}; {_when(data)})"
    )


def floor(data: dict) -> str:
    """The selectors floor against the loops that read epoll without selectors."""
    base = _row(data, FLOOR)
    others = ", ".join(
        f"{name} {_cpu(_row(data, name))}" for name in ("callbacks", "traps", YARDSTICK)
    )
    return f"{FLOOR} {_cpu(base)} of server CPU per echo request; {others} ({_when(data)})"


SERVERS = (  # (row, what reads the socket), on each of the two loops that speak asyncio's API
    ("{loop}-protocol", "`Protocol.data_received`, a callback per read"),
    ("{loop}-streams", "`StreamReader.read` in a task, fed by a Protocol"),
    ("{loop}/coroutines", "`loop.sock_recv` in a task, waiting through a future and a reader"),
)


def protocols(data: dict) -> str:
    """The table of the "Why transports and protocols" section, and what it says."""
    lines = [
        "| server | reads with | CPU per request | × Protocol | syscalls per request "
        "| epoll_ctl | failed recvs | other |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    said = []
    for loop in ("asyncio", "uvloop"):
        base = _row(data, SERVERS[0][0].format(loop=loop))
        extra = []
        for row, reads in SERVERS:
            name = row.format(loop=loop)
            entry = _row(data, name)
            s = entry["syscalls"]
            label = name.replace("/", " · ")
            lines.append(
                f"| {label} | {reads} | {_cpu(entry)} | {_ratio(entry, base)} | {s['total']:.2f} "
                f"| {s['epoll_ctl']:.2f} | {s['recv_eagain']:.2f} | {s['other']:.2f} |"
            )
            if entry is not base:
                extra.append(f"{cpu_us(entry) - cpu_us(base):+.1f} µs")
        said.append(f"on {loop}, streams {extra[0]} and `sock_recv` {extra[1]}")
    return (
        "\n"
        + "\n".join(lines)
        + "\n\nAgainst each loop's Protocol server, per request: "
        + "; ".join(said)
        + f" ({_when(data)}; one untimed repetition per row, the echo section of "
        "[`reports/bench.md`](../reports/bench.md) has medians).\n"
    )


# -- the sizes of the loops, from the code --------------------------------------------------


def codesize(root: Path = ROOT) -> str:
    """Each home-made loop's code lines, its asyncio drop-in's apart, and its essence's
    non-blank lines, counted from the tree (:mod:`bench.render.codesize`)."""
    lines = [
        "| loop | code lines, full loop | and as asyncio's event loop | essence, non-blank lines |",
        "|---|--:|--:|--:|",
    ]
    for name in home_made(root):
        folder = root / "loops" / name
        alone, api = loop_and_asyncio_api(folder, root)
        files = sorted(p.name for p in loop_files(folder) if p.resolve() in asyncio_api_files(root))
        extra = f"{api:,} more: " + ", ".join(f"`{f}`" for f in files) if api else "–"
        essence = folder / "essence.py"  # a fresh scaffold has none yet
        written = essence.read_text().splitlines() if essence.is_file() else None
        shown = sum(1 for line in written if line.strip()) if written is not None else "–"
        lines.append(f"| `{name}` | {alone:,} | {extra} | {shown} |")
    return "\n" + "\n".join(lines) + "\n"


# -- the table of designs, from the variants' declarations -----------------------------------


def _cell(text: str | None) -> str:
    return (text or "not declared").replace("|", "\\|")


def design_row(variant: loops.Variant) -> str:
    """One variant's row of the designs table, from what it declares."""
    kind = "reference" if variant.reference else "home-made"
    entries = ", ".join(f"`{name}`" for name in variant.thread_entries) or "none"
    return (
        f"| `{variant.name}` ({kind}) | {_cell(variant.io_model)} | {', '.join(variant.styles)} "
        f"| {_cell(variant.waits_in)} | {_cell(variant.wake_up)} | {entries} "
        f"| {_cell(variant.cancellation)} |"
    )


def io_row(variant: loops.Variant) -> str:
    """One variant's row of the I/O table: how its wait reports, ghost fds, a socket call."""
    return (
        f"| `{variant.name}` | {_cell(variant.io_model)} | {_cell(variant.reporting)} "
        f"| {_cell(variant.ghost_fds)} | {_cell(variant.socket_call_first)} |"
    )


def _legend(field: str, table: dict[str, str]) -> str:
    return f"- *{field}*: " + " · ".join(f"**{key}**: {meaning}" for key, meaning in table.items())


TABLES = {  # block name: (header lines, row, legend lines), each rendered from the declarations
    "designs": (
        "| loop | I/O | styles | sleeps in | woken from threads by | thread entry points "
        "| a cancel reaches waiting work by |\n|---|---|---|---|---|---|---|",
        design_row,
        "",
    ),
    "io": (
        "| loop | I/O | the wait reports | a closed fd still reported (ghost) "
        "| a socket call (`recv`) first |\n|---|---|---|---|---|",
        io_row,
        "\n".join(
            _legend(column, table)
            for column, table in zip(
                ("the wait reports", "ghost", "a socket call first"),
                DECLARED_KEYS.values(),
                strict=True,
            )
        ),
    ),
}


def table(name: str, existing: str = "", root: Path = ROOT) -> str:
    """Block `name` of TABLES for the variants whose folder is under root/loops (not those a
    LAB_EXTRA_LOOPS adds); an unavailable variant keeps its row from `existing`."""
    header, row, legend = TABLES[name]
    kept = {m[1]: m[0] for m in re.finditer(r"^\| `(\w+)`.*$", existing, re.M)}
    lines = [header]
    for name, variant in loops.discover().items():
        if not (root / "loops" / name).is_dir():
            continue
        if variant.available:
            lines.append(row(variant))
        else:
            lines.append(kept.get(name, f"| `{name}` | unavailable here: {variant.unavailable} |"))
    return "\n" + "\n".join(lines) + ("\n\n" + legend if legend else "") + "\n"


def designs(existing: str = "", root: Path = ROOT) -> str:
    """The designs table (see :func:`table`)."""
    return table("designs", existing, root)


# -- the blocks, and the pages they sit in ---------------------------------------------------


def memory(results: Path, name: str) -> str:
    """What one loop holds per sleeping task and per open connection, from the quick run's
    resident and connections points, beside asyncio's; or where the machine stopped it."""
    said = []
    for workload, mode, metric, what in (
        ("sleep", "resident", "bytes_per_sleeper", "per sleeping task"),
        ("connections", None, "active_bytes_per_connection", "per connection after a request"),
    ):
        for point in stored_points(results, "quick", workload).values():
            params = point["params"]
            if params.get("mode") != mode:
                continue
            at = f"{params.get('tasks') or params.get('connections'):,}"
            mine = _memory_of(point, name, metric)
            if mine is None:
                continue
            if mine.startswith("stopped"):
                said.append(f"{what} at {at}, no figure: {mine}")
                continue
            base = next(
                (
                    f" ({key.removesuffix('/native').replace('/', ' · ')}: {found})"
                    for key in (f"{USER_BASE}/native", "asyncio/coroutines")
                    if (found := _memory_of(point, key, metric)) and found[0].isdigit()
                ),
                "",
            )
            said.append(f"{mine} {what} at {at}{base}")
    if not said:
        return f"(not measured yet: `python -m bench run --workload connections --loop {name}`)"
    return "; ".join(said) + " (resident memory, `python -m bench run`, quick run)"


def _memory_of(point: dict, name: str, metric: str) -> str | None:
    """A row's median of metric in bytes, or what stopped it; None if the row is not there."""
    rows = point["rows"]
    key = name if "/" in name else next((k for k in rows if k.split("/")[0] == name), None)
    if key not in rows:
        return None
    summary = summarize(rows[key]["reps"], (Metric(metric, metric, higher_is_better=False),))
    if summary.status != "ok":
        return f"stopped, {summary.reason.splitlines()[0]}"
    return f"{summary.stats[metric].median:,.0f} bytes"


def blocks(data: dict | None, results: Path | None = None) -> dict[str, Callable[[str], str]]:
    """Every block name, with what renders it from the block's current text (the memory
    blocks from the stores under `results`, where given)."""
    rendering: dict[str, Callable[[str], str]] = {
        name: lambda old, name=name: table(name, old) for name in TABLES
    }
    rendering["plan"] = lambda _old: plan()
    rendering["codesize"] = lambda _old: codesize()
    if results is not None:
        for name in loops.discover():
            rendering[f"memory:{name}"] = lambda _old, name=name: memory(results, name)
    if data is None:  # no anatomy stored: the figure blocks keep what they hold
        return rendering
    rendering["protocols"] = lambda _old: protocols(data)
    rendering["floor"] = lambda _old: floor(data)
    for name in home_made():
        rendering[f"cost:{name}"] = lambda _old, name=name: cost(data, name)
    for name in ("futures", "traps", "roundrobin"):
        rendering[f"drained:{name}"] = lambda _old, name=name: drained(data, name)
    return rendering


def render_text(text: str, rendering: dict[str, Callable[[str], str]]) -> str:
    """`text` with every block it holds re-rendered; an unknown block name is an error."""

    def one(match: re.Match) -> str:
        name, old = match[1], match[2]
        if name not in rendering:
            if name.startswith(("cost:", "drained:", "protocols", "floor", "memory:")):
                return match[0]  # a figure block with no anatomy stored: keep it
            raise KeyError(f"unknown block <!-- figures:{name} -->; known: {sorted(rendering)}")
        return f"<!-- figures:{name} -->{rendering[name](old)}<!-- /figures -->"

    return BLOCK.sub(one, text)


def render_reading(results: Path) -> list[Path]:
    """Re-render every block of the reading path of the tree that holds `results` (its
    ``reports/results``); the files that changed. Results kept elsewhere (a test's temporary
    folder) have no reading path beside them: nothing is written."""
    root = results.resolve().parent.parent
    if not (root / "loops" / "README.md").is_file():
        return []
    rendering = blocks(load_anatomy(results), results)
    for name in TABLES:
        rendering[name] = lambda old, name=name: table(name, old, root)
    rendering["codesize"] = lambda _old: codesize(root)
    changed = []
    for path in readmes(root):
        text = path.read_text()
        new = render_text(text, rendering)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


if __name__ == "__main__":
    from bench.store import RESULTS

    for written in render_reading(RESULTS):
        print(f"wrote {written}")
