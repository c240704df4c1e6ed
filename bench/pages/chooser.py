"""The chooser's first screen: the servers users install, one row each, against uvloop-protocol.

A row per server written in a production loop's own API (and gevent through the lab's
adapter, its users' way of writing a server): its capacity (server CPU per request in the
closed loop, a cost the load generator's ceiling does not cap), its idle cost (the same at
the fixed offered load), TLS's cost, memory per connection, its cost at 10,000 connections
(the full run), uvicorn on its loop, and what real projects' own suites found in that loop;
each ratio against uvloop-protocol measured in the same session, with its 95% interval
(:func:`bench.render.intervals.ratio_interval`, paired by round), or, for capacity and idle
cost, pooled across the sessions on this machine once three hours' sessions measured it
(:func:`bench.studies.reproductions.render.pooled`), or why there is none. Then
the home-made loops, labelled as the lab's designs, and multi-core said as not measured. Every
figure comes from the stored results; a column whose study is not stored says "not measured
here".
"""

from __future__ import annotations

import json
import re
import statistics
import tomllib
from pathlib import Path

from bench import headline, registry
from bench.pages import regimes
from bench.plan import YARDSTICK
from bench.render.intervals import CONFIDENCE, ratio_interval, worded
from bench.render.page import MODES
from bench.render.tables import sessions_line
from bench.studies import connections, http
from bench.studies.reproductions import render as reproduction
from bench.studies.tls import render as tls
from bench.summary import by_round, counted, peer_saturated
from machine.environment import describe

NOT_MEASURED = "not measured here"
OTHER_SESSION = "no ratio: another session"
BASE = f"{YARDSTICK}/native"
# gevent has no server of its own here: its users write blocking code over gevent's sockets,
# which is what this adapter runs.
ADAPTED = ("gevent/blocking",)
CPU = "server_cpu_us"
# The full run's most connections (C10k), as echo declares its points.
MANY = max(point.args["connections"] for point in registry.get("echo").points(True))


def slug(title: str) -> str:
    """A heading's anchor as GitHub makes it (lower case, punctuation dropped, spaces to -)."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def stored(reports: Path, workload: str, mode: str) -> dict:
    """One workload's stored results of one run ({} where none is stored)."""
    path = reports / "results" / mode / f"{workload}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def point(results: dict | None, where: dict) -> dict | None:
    """The stored point whose parameters hold every item of where (None meaning absent)."""
    for point in (results or {}).get("points", {}).values():
        params = point["params"]
        if all(params.get(k) == v for k, v in where.items()):
            return point
    return None


def capacity_rounds(reps: list[dict], metric: str = CPU) -> dict[int, float]:
    """metric by round over the counted repetitions, where the load generator passing 90% of
    its core does not disqualify one: the server's CPU per request is its own either way. A
    failed repetition leaves the row without a figure, as its table does."""
    kept = counted(reps)
    if any(rep.get("error") for rep in kept):
        return {}
    return {
        i: rep[metric]
        for i, rep in enumerate(kept)
        if not rep.get("invalid") and isinstance(rep.get(metric), int | float)
    }


def _ceiling(reps: list[dict]) -> float | None:
    """The median requests/s of a row whose load generator saturated in most repetitions
    (the server did at least that much), else None."""
    saturated = [rep for rep in counted(reps) if peer_saturated(rep)]
    if len(saturated) * 2 <= len(counted(reps)):
        return None
    return statistics.median(rep["requests_per_s"] for rep in saturated)


def _servers(point: dict | None) -> list[str]:
    """The stored servers users install: anchors named after a reference loop, and ADAPTED."""
    rows = (point or {}).get("rows", {})
    loops = {key.split("/")[0] for key, row in rows.items() if row.get("kind") == "reference"}
    native = [
        key
        for key, row in rows.items()
        if row.get("kind") == "anchor" and (key.split("-")[0] in loops or key == BASE)
    ]
    return native + [key for key in ADAPTED if key in rows]


def cell(point, key, metric, unit, values=by_round, higher=False, base=BASE, sessions=()) -> str:
    """key's figure against base at one point: the base's own figure in unit, or the ratio
    with its interval and word (pooled across `sessions`, the point as every session on this
    machine measured it, where enough did: bench/studies/reproductions), or why there is
    none."""
    rows = (point or {}).get("rows", {})
    if key not in rows:
        return NOT_MEASURED
    mine = values(rows[key]["reps"], metric)
    if not mine:
        return "no figure"  # the row's own table says why
    if key == base:
        return unit.format(statistics.median(mine.values()))
    if base not in rows:
        return f"no {base.split('/')[0]} here"
    across = reproduction.pooled(list(sessions), key, base, values, metric)
    if across is not None:
        ratio = (across.value, across.low, across.high)
        return f"{worded(ratio, higher, brief=True)}, {across.sessions} sessions"
    if rows[key]["session"] != rows[base]["session"]:
        return OTHER_SESSION
    found = ratio_interval(mine, values(rows[base]["reps"], metric))
    return worded(found, higher, brief=True) if found else "one repetition: no interval"


def _loaded(point, key) -> str:
    """key's cost at the loaded rate against the base's, or that it could not keep the rate
    (most of its repetitions fell short: a result, where its table has no figure)."""
    reps = counted((point or {}).get("rows", {}).get(key, {}).get("reps", []))
    short = [rep for rep in reps if "could not keep the rate" in (rep.get("invalid") or "")]
    if reps and len(short) * 2 > len(reps):
        return f"falls behind ({len(short)} of {len(reps)} repetitions)"
    return cell(point, key, CPU, "{:.1f} µs")


def _tls(point, twin, key) -> str:
    rows = [(p or {}).get("rows", {}).get(key) for p in (point, twin)]
    if None in rows:
        return NOT_MEASURED
    if rows[0]["session"] != rows[1]["session"]:
        return OTHER_SESSION
    found, _ = tls.ratio(*rows)
    return worded(found, brief=True) if found else "no figure"


def _gaps(root: Path) -> dict[str, list[tuple[str, str]]]:
    """Per loop run under real projects' suites, (suite, how it is not run, or "") of each test
    that fails for a real gap in that loop (the TOMLs' class "gap")."""
    found: dict[str, list[tuple[str, str]]] = {}
    for run in sorted((root / "reports" / "suites").glob("*.json")):
        found.setdefault(json.loads(run.read_text()).get("loop", run.stem.split("-")[-1]), [])
    for toml in sorted((root / "tests" / "real_suites").glob("*.toml")):
        for entry in tomllib.loads(toml.read_text()).get("expected", []):
            for loop in entry["loops"] if entry["class"] == "gap" else []:
                if loop in found:  # a loop no suite has run on is not measured here
                    found[loop].append((toml.stem, entry.get("not_run", "")))
    return found


def _suites(gaps: dict[str, list[tuple[str, str]]], loop: str) -> str:
    if loop not in gaps:
        return NOT_MEASURED
    if loop == "asyncio":
        return "the suites' reference"  # a test failing on stock asyncio is the suite's own
    suites = sorted({suite for suite, _ in gaps[loop]})
    if not suites:
        return "no gap"
    fatal = sum(how in ("hangs", "crashes") for _, how in gaps[loop])
    said = f"{len(gaps[loop])} findings ({', '.join(suites)})"
    return said + (f", {fatal} hang or crash the run" if fatal else "")


def read(reports: Path, mode: str) -> tuple[dict, dict[str, dict | None]]:
    """Every stored session by name, and the points the servers' table reads, by column."""
    runs = {
        (name, run): stored(reports, name, run)
        for name, run in (("echo", mode), ("connections", mode), ("http", mode), ("echo", "full"))
    }
    echo, paced = runs["echo", mode], dict(headline.HEADLINE_PACED)
    loaded = {**paced, "rate": headline.LOADED_RATE, headline.CURVE[0]: True}
    found = {
        "closed": point(echo, dict(headline.HEADLINE_CLOSED)),
        "paced": point(echo, paced),
        "loaded": point(echo, loaded),
        "tls": point(echo, {**paced, headline.TLS: True}),
        "memory": point(
            runs["connections", mode], {"connections": connections.CONNECTIONS[False][0]}
        ),
        "full": point(runs["echo", "full"], {**paced, "connections": MANY}),
        "uvicorn": point(runs["http", mode], http.HEADLINE_POINT),
    }
    sessions = {n: s for data in runs.values() for n, s in data.get("sessions", {}).items()}
    # A column measured on another machine than the headline point's is not set beside it.
    here = _machine(found["closed"], sessions)
    for column, at in found.items():
        if at is not None and here is not None and _machine(at, sessions) != here:
            found[column] = None
    return sessions, found


def _machine(at: dict | None, sessions: dict) -> str | None:
    """The machine a stored point's newest session ran on (None: not known)."""
    if not at or not at["rows"]:
        return None
    newest = max(row["session"] for row in at["rows"].values())
    env = sessions.get(newest, {}).get("environment")
    return describe(env) if env else None


def machine(reports: Path, mode: str = "quick") -> str | None:
    """The machine the first screen's headline point ran on (None: not stored, or not said)."""
    sessions, found = read(reports, mode)
    return _machine(found["closed"], sessions)


def ran_in(reports: Path, mode: str = "quick") -> str | None:
    """Where the servers' table's figures ran: each session once, with its machine and
    commit (None where the table has none)."""
    sessions, found = read(reports, mode)
    if found["closed"] is None:
        return None
    names = [row["session"] for p in found.values() if p for row in p["rows"].values()]
    said = sessions_line(sessions, names)
    return said[0] if said else None


def table(reports: Path, mode: str = "quick", link: str = "") -> tuple[list[str], list[str]]:
    """The servers' table as markdown lines ([] where echo's headline point is not stored), and
    the columns left out of it because no server has a figure there (said once, not in every
    cell)."""
    _, found = read(reports, mode)
    closed, paced, tls_paced = found["closed"], found["paced"], found["tls"]
    loaded = found["loaded"]
    memory, full, uvicorn = found["memory"], found["full"], found["uvicorn"]
    many = {**dict(headline.HEADLINE_PACED), "connections": MANY}
    gaps = _gaps(reports.parent)
    if closed is None:
        return [], []

    def cost(key: str) -> float:
        found = capacity_rounds(closed["rows"][key]["reps"]) if key in closed["rows"] else {}
        return statistics.median(found.values()) if found else float("inf")

    servers = sorted(_servers(paced), key=cost)  # cheapest first, no figure last
    if not servers:
        return [], []
    page = f"{link}{MODES[mode]}#"
    # Every session on this machine at the two headline points, to pool each ratio across.
    across = [
        reproduction.sessions_at(reports / "results", dict(where)) if mode == "quick" else []
        for where in (headline.HEADLINE_CLOSED, headline.HEADLINE_PACED)
    ]
    headers = [
        "server",
        f"[capacity]({page}{slug(headline.point_title(closed['params']))})",
        f"[idle cost]({page}{slug(headline.point_title(paced['params']))})",
        f"[loaded cost]({page}{slug(headline.point_title(loaded['params']))})"
        if loaded
        else "loaded cost",
        f"[TLS ÷ plain]({page}{slug(tls.TITLE)})",
        f"[memory / connection]({page}{slug(connections.TITLE)})",
        f"[{MANY:,} connections]({link}{MODES['full']}#{slug(headline.point_title(many))})"
        if full
        else f"{MANY:,} connections",
        f"[under uvicorn]({page}{slug(http.TITLE)})",
        f"[own suites]({link}real-suites.md#findings-the-real-gaps)",
    ]
    rows = []
    for key in servers:
        loop = key.split("-")[0].split("/")[0]
        capacity = cell(closed, key, CPU, "{:.1f} µs", capacity_rounds, sessions=across[0])
        ceiling = _ceiling(closed["rows"][key]["reps"]) if key in closed["rows"] else None
        rows.append(
            [
                f"`{key.removesuffix('/native').replace('/', ' · ')}`",
                capacity + (f" at ≥ {ceiling:,.0f}/s" if ceiling else ""),
                cell(paced, key, CPU, "{:.1f} µs", sessions=across[1]),
                _loaded(loaded, key),
                _tls(paced, tls_paced, key),
                cell(memory, key, connections.HEADLINE, "{:,.0f} B"),
                cell(full, key, CPU, "{:.1f} µs") if full else NOT_MEASURED,
                cell(
                    uvicorn,
                    f"{loop}/{http.STYLE}",
                    http.HEADLINE,
                    "{:,.0f}/s",
                    higher=True,
                    base=f"{YARDSTICK.split('-')[0]}/{http.STYLE}",
                ),
                _suites(gaps, loop),
            ]
        )
    empty = [i for i in range(1, len(headers)) if all(row[i] == NOT_MEASURED for row in rows)]
    left_out = [re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", headers[i]) for i in empty]
    headers = [h for i, h in enumerate(headers) if i not in empty]
    rows = [[cell for i, cell in enumerate(row) if i not in empty] for row in rows]
    return [
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
        *("| " + " | ".join(row) + " |" for row in rows),
    ], left_out


def home_made(reports: Path, mode: str = "quick") -> str | None:
    """The cheapest home-made design by capacity and by idle cost, against uvloop-protocol."""
    results = stored(reports, "echo", mode)
    parts = []
    for name, where, values in (
        ("capacity", headline.HEADLINE_CLOSED, capacity_rounds),
        ("idle cost", headline.HEADLINE_PACED, by_round),
    ):
        found_at = point(results, dict(where))
        rows = (found_at or {}).get("rows", {})
        found = {k: values(r["reps"], CPU) for k, r in rows.items() if r.get("kind") == "home-made"}
        found = {k: v for k, v in found.items() if v}
        if not found:
            continue
        key = min(found, key=lambda k: statistics.median(found[k].values()))
        parts.append(
            f"by {name} `{key.replace('/', ' · ')}`, "
            f"{statistics.median(found[key].values()):.1f} µs per request (against {YARDSTICK} "
            f"{cell(found_at, key, CPU, '', values)})"
        )
    if not parts:
        return None
    return (
        "**Home-made loops** (the lab's own designs, to read and learn from, not packages to "
        "deploy): the cheapest " + "; ".join(parts) + "."
    )


def multi_core(reports: Path, mode: str = "quick") -> str | None:
    """Multi-core, said as not measured, from what the stored session ran on."""
    sessions = stored(reports, "echo", mode).get("sessions", {})
    if not sessions:
        return None
    env = sessions[max(sessions)]["environment"]
    pinning = env.get("pinning", "pinning not recorded")
    held = (
        "whose threads all share one core, its load generator on another"
        if pinning.startswith("subject on core")
        else "(not pinned to a core in this session)"
    )
    return (
        f"**Multi-core: not measured here.** Every server runs as one process {held} "
        f"(bench/procs.py: {pinning}; "
        f"this machine has {env.get('logical_cores', '?')} logical cores): a server spread "
        "over several cores (worker processes, a free-threaded build) would take its load "
        "generator's core, so nothing here measures one."
        + (f" The table above: {where}" if (where := ran_in(reports, mode)) else "")
    )


def regime(reports: Path, mode: str = "quick", link: str = "") -> str | None:
    """What the table's two regimes measure, for its servers, from the cost anatomy of the
    headline point's machine (bench.pages.regimes)."""
    sessions, found = read(reports, mode)
    if found["closed"] is None:
        return None
    newest = max(row["session"] for row in found["closed"]["rows"].values())
    env = sessions.get(newest, {}).get("environment")
    page = f"{link}{MODES[mode]}"
    servers = _servers(found["paced"])
    loaded = regimes.loaded_regime(found["loaded"], servers) or ""
    return regimes.line(reports / "results", servers, env, page, loaded)


def lines(reports: Path, mode: str = "quick", link: str = "") -> list[str]:
    """The first screen's items: what the table holds, the table (one item, its lines joined),
    the home-made loops, multi-core ([] where echo's headline point is not stored); what its
    regimes measure is :func:`regime`, which the verdict places after its hazard."""
    rows, left_out = table(reports, mode, link)
    if not rows:
        return []
    intro = (
        "**Choosing a server** (the servers users install, cheapest capacity first; each "
        f"figure against {YARDSTICK}, {CONFIDENCE:.0%} within one session, or pooled across the "
        "sessions a cell names): "
        f"*capacity* is server CPU per request in the closed loop at {headline.HEADLINE_AT} "
        "(≥ N/s: the load generator saturated first); "
        f"*idle cost* the same at a fixed {headline.HEADLINE_RATE:,} requests/s, *loaded cost* at "
        f"{headline.LOADED_RATE:,}; TLS over plain there; memory per connection at "
        f"{connections.CONNECTIONS[False][0]:,} connections; idle cost at {MANY:,} connections "
        "(the full run); uvicorn's requests/s on that server's loop; real projects' own suites' "
        "findings in that loop. A column's link is its section."
        + (f" Not measured for these servers: {', '.join(left_out)}." if left_out else "")
    )
    return [
        intro,
        "\n".join(rows),
        *filter(None, [home_made(reports, mode), multi_core(reports, mode)]),
    ]


def markdown(items: list[str]) -> list[str]:
    """The verdict's items as bench.md lines: a table as it is, with a blank line either side;
    every other item a bullet."""
    out: list[str] = []
    for item in items:
        if item.startswith("|"):
            out += ["", *item.splitlines(), ""]
        else:
            out.append(f"- {item}")
    return out
