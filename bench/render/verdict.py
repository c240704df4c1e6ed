"""The answer first: at most eight lines, read off the stored data, that a chooser needs.

The production servers (the native servers of asyncio, uvloop, trio and curio, then the lab's
adapters of those loops) by server CPU per echo request against uvloop-protocol; the cheapest
home-made design per echo request at the fixed offered load, against
uvloop-protocol and asyncio-protocol, each ratio with its interval and only within one session;
the fastest home-made switch; the cheapest home-made sleeper; the worst finding of the
conformance suite; where to read next. Every figure comes from ``reports/results/`` (the
bench's stored repetitions and the conformance suite's outcomes); the points are the ones the
workloads declare as their headline (``HEADLINE_POINT``), so this page and the bench's glance
read the same rows.

The lines are markdown: bench.md opens with them, and the HTML site's index shows them.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from bench.plan import USER_BASE, YARDSTICK
from bench.registry import echo, micro, sleep  # the headline points, declared there
from bench.render import reproduction, work
from bench.render.intervals import ratio_interval, worded
from bench.summary import by_round, valid_values
from conformance import findings as found
from machine.interpreters import REFERENCE


def _stored(reports: Path, workload: str, mode: str) -> dict | None:
    path = reports / "results" / mode / f"{workload}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _point(stored: dict | None, where: dict) -> dict | None:
    """The stored point whose parameters hold every item of where (None: not stored)."""
    for point in (stored or {}).get("points", {}).values():
        params = point["params"]
        if all(params.get(k) == v for k, v in where.items()):
            return point
    return None


def _values(reps: list[dict], metric: str, rate: float | None = None) -> list[float]:
    """metric over the valid repetitions (the bench's rule), at one offered rate if given."""
    return valid_values([r for r in reps if rate is None or r.get("rate") == rate], metric)


def _label(key: str) -> str:
    return key.replace("/", " · ")


def _cheapest(point: dict | None, metric: str):
    """(key, row, values, rate) of the home-made row with the lowest median of metric.

    A repetition's offered rate is part of its point: a row whose repetitions ran at two
    rates is two candidates, never one median over both.
    """
    best = None
    for key, row in sorted((point or {}).get("rows", {}).items()):
        if row.get("kind") != "home-made":
            continue
        for rate in sorted({r.get("rate") for r in row["reps"]}, key=lambda r: r or 0):
            values = _values(row["reps"], metric, rate)
            if values and (best is None or statistics.median(values) < statistics.median(best[2])):
                best = (key, row, values, rate)
    return best


def _against(point: dict, best: tuple, anchor: str, metric: str) -> str:
    """The ratio to an anchor measured in the same session at the same rate, or why none."""
    _, row, values, rate = best
    base = point["rows"].get(f"{anchor}/native")
    if base is None:
        return f"{anchor} is not stored at this point"
    if base["session"] != row["session"]:
        return (
            f"no ratio to {anchor}: it was measured in another session ({base['session'][:15]}) "
            f"than this row ({row['session'][:15]})"
        )
    base_values = _values(base["reps"], metric, rate)
    if not base_values:
        return f"no ratio to {anchor}: it has no valid repetition at this rate"
    paired = (by_round(row["reps"], metric, rate), by_round(base["reps"], metric, rate))
    ratio = ratio_interval(*paired)
    if ratio is None:
        share = statistics.median(values) / statistics.median(base_values)
        return f"against {anchor} ×{share:.2f} (one repetition a side: no interval)"
    return f"against {anchor} {worded(ratio)}"


def _sessions_note(point: dict) -> str:
    """A warning when the home-made rows ranked here come from more than one session."""
    sessions = {r["session"] for r in point["rows"].values() if r.get("kind") == "home-made"}
    if len(sessions) < 2:
        return ""
    return (
        f" The home-made rows come from {len(sessions)} sessions, so this rank crosses "
        "sessions: indicative only until they are measured together."
    )


def production(point: dict | None, metric: str = "server_cpu_us") -> str | None:
    """The servers users can install, cheapest first, each against uvloop-protocol in its own
    session: the native servers written in each production loop's API (an anchor whose name
    starts with a reference loop's), then the lab's adapters of those loops."""
    if not point:
        return None
    rows = point["rows"]
    reference = {key.split("/")[0] for key, row in rows.items() if row.get("kind") == "reference"}
    base = rows.get(f"{YARDSTICK}/native")
    if base is None:
        return None

    def figure(key: str) -> tuple[float, str] | None:
        row = rows[key]
        values = _values(row["reps"], metric)
        if not values:
            return None
        if key == f"{YARDSTICK}/native":
            return statistics.median(values), f"`{YARDSTICK}` {statistics.median(values):.1f} µs"
        name = _label(key).removesuffix(" · native")
        if row["session"] != base["session"]:
            return statistics.median(values), f"`{name}` (another session: no ratio)"
        paired = (by_round(row["reps"], metric), by_round(base["reps"], metric))
        ratio = ratio_interval(*paired)
        said = worded(ratio, brief=True) if ratio else "one repetition"
        return statistics.median(values), f"`{name}` {said}"

    native = [
        k
        for k, r in rows.items()
        if r.get("kind") == "anchor"
        and (k.split("-")[0] in reference or k == f"{YARDSTICK}/native")
    ]
    adapters = [k for k, r in rows.items() if r.get("kind") == "reference"]
    said = [sorted(filter(None, map(figure, keys))) for keys in (native, adapters)]
    if not said[0]:
        return None
    params = point["params"]
    # Older stores keep the offered rate on each repetition, not on the point.
    rate = params.get("rate") or next((r["rate"] for r in base["reps"] if r.get("rate")), 0)
    text = (
        f"**For a network service** (server CPU per echo request at a fixed "
        f"{rate:,.0f} requests/s, {params['size']:,} B × "
        f"{params['connections']} connections; the servers users install, against "
        f"{YARDSTICK}, 95% within one session): " + "; ".join(t for _, t in said[0])
    )
    if said[1]:
        text += ". Through the lab's adapters: " + "; ".join(t for _, t in said[1])
    return text + "."


def least_work(results: Path, link: str) -> str | None:
    """The home-made row that does the least work per echo request, in exact instructions,
    against the two servers users write (bench/render/work.py ranks every row)."""
    ranked = dict(work.ranking(results))
    home = next((k for k, e in ranked.items() if e.get("kind") == "home-made"), None)
    bases = {name: ranked.get(f"{name}/native") for name in (YARDSTICK, USER_BASE)}
    if home is None or None in bases.values():
        return None
    mine = ranked[home]["closed"]["per_request"]
    against = "; ".join(
        f"×{mine / entry['closed']['per_request']:.2f} {name}'s" for name, entry in bases.items()
    )
    changed = [k for k in (home, *(f"{n}/native" for n in bases)) if work.stale(k, ranked[k])]
    return (
        f"**Least work per echo request** (instructions, exact for the run counted): "
        f"`{_label(home)}`, {mine:,.0f} per request in the closed loop, {against} "
        f"([every row ranked]({link}bench.md#work-per-request-counted))"
        + (
            f"; counted on code that has changed since: {', '.join(map(work.label, changed))}."
            if changed
            else "."
        )
    )


def lines(reports: Path, mode: str = "quick", link: str = "") -> list[str]:
    """The verdict as markdown lines (at most 8) from one run's stored results (quick or
    full); link prefixes relative links to reports/ (the site is one folder down)."""

    out = []
    # The declared rate's point; else (results stored before rates were declared) the old one.
    stored = _stored(reports, "echo", mode)
    point = _point(stored, dict(echo.HEADLINE_PACED)) or _point(
        stored, {"measure": echo.PACED, **echo.HEADLINE_POINT, echo.TLS: None}
    )
    chosen = production(point)
    if chosen:
        out.append(chosen)
    best = _cheapest(point, "server_cpu_us")
    if point is not None and best is not None:
        key, _, values, rate = best
        out.append(
            f"**Cheapest home-made design per echo request**: `{_label(key)}`, "
            f"{statistics.median(values):.1f} µs of server CPU per request (median of "
            f"{len(values)}) at a fixed {rate or 0:,.0f} requests/s, "
            f"{echo.HEADLINE_POINT['size']:,} B × {echo.HEADLINE_POINT['connections']} "
            "connections: "
            + "; ".join(
                _against(point, best, anchor, "server_cpu_us") for anchor in (YARDSTICK, USER_BASE)
            )
            + "."
            + _sessions_note(point)
        )
    headline = [
        p
        for p in (stored or {}).get("points", {}).values()
        if all(p["params"].get(k) == v for k, v in echo.HEADLINE_POINT.items())
        and not p["params"].get(echo.CURVE[0])
        and not p["params"].get(echo.TLS)
    ]
    still = reproduction.bullet(reports / "results", headline) if mode == "quick" else None
    if still:
        out.append(still)
    least = least_work(reports / "results", link) if mode == "quick" else None
    if least:
        out.append(least)
    switch = _cheapest(_point(_stored(reports, "micro", mode), micro.HEADLINE_POINT), "switch")
    if switch is not None:
        out.append(
            f"**Fastest home-made switch**: `{_label(switch[0])}`, "
            f"{statistics.median(switch[2]):,.0f} ns per `switch` operation of the micro "
            "benchmarks (their section says what it times)."
        )
    sleeper = _cheapest(
        _point(_stored(reports, "sleep", mode), sleep.HEADLINE_POINT), "cpu_per_sleeper_us"
    )
    if sleeper is not None:
        out.append(
            f"**Cheapest home-made sleeper**: `{_label(sleeper[0])}`, "
            f"{statistics.median(sleeper[2]):.1f} µs of CPU per sleeper at "
            f"{sleep.HEADLINE_POINT['tasks']:,} sleepers."
        )
    stored = found.stored(reports / "results" / "conformance")
    if stored:
        results = stored.get(REFERENCE) or next(iter(stored.values()))
        worst = found.findings(results, found.load_severities(), {})
        if worst:
            f = worst[0]
            loops = ", ".join(f"{v} ({'/'.join(s)})" for v, s in sorted(f.affected.items()))
            out.append(
                f"**Biggest correctness hazard** ([conformance]({link}conformance.md#findings)): "
                f"*{f.severity}* on {loops}: {f.text}."
            )
    site = "" if link else ", [the HTML report](site/index.html)"
    out.append(
        f"Read next: [the glance]({link}bench.md#at-a-glance), "
        f"[the full run]({link}bench-full.md), [conformance]({link}conformance.md), "
        f"[timelines]({link}timelines.md){site}, "
        f"[the loops' reading path]({link}../loops/README.md), [the README]({link}../README.md)."
    )
    return out[:8]
