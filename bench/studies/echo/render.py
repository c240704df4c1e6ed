"""Echo, the rendering side: the prose echo's section writes from its stored data.

Each table names the load generator per row; a closed-loop table says where the best home-made
loop stands against the pure-Python floor, a fixed-load one which rows could not keep the rate;
a fixed-load point says its offered rate; the section ends with the fixed load read against the
closed loop, then TLS's cost per request (:mod:`bench.studies.tls.render`).
"""

from __future__ import annotations

import statistics

from bench.headline import (
    CURVE,
    DERIVED,
    HEADLINE_AT,
    HEADLINE_POINT,
    HEADLINE_RATE,
    PACED,
    TLS,
)
from bench.plan import FLOOR, YARDSTICK
from bench.studies.tls import render as tls
from bench.study import Rendering
from bench.summary import valid_values
from workloads.echo.load import KEPT_RATE  # the generator's rule for a kept rate

# A server this many times the generator's cost per request, or less, is named as close to it
# where the generator saturated: its closed-loop figure says little about the server.
CLOSE = 1.5


def detail_column(params: dict) -> str:
    """Every echo table has a column naming which load generator measured each row."""
    return "generator"


def detail(reps: list[dict]) -> str:
    """Which load generator measured a row (records from before the native one: Python)."""
    kinds = sorted({rep.get("generator", "python") for rep in reps if "error" not in rep})
    return ", ".join(kinds) or "—"


def observations(params: dict, rendered: list) -> list[str]:
    """Where the best home-made loop stands against the pure-Python floor."""
    if params.get("measure") == PACED:
        return paced_observations(rendered)
    costs = [(r.label, *r.summary.costs) for r in rendered if r.summary.costs]
    lines = []
    if costs:
        cheaper = [label for label, server, peer in costs if server <= peer]
        close = [label for label, server, peer in costs if peer < server <= CLOSE * peer]
        said = []
        if cheaper:
            said.append(f"{', '.join(cheaper)} cost less per request than the generator")
        if close:
            said.append(
                f"{', '.join(close)} cost less than {CLOSE:g}× what the generator costs per request"
            )
        if said:
            lines.append(
                f"Where the generator saturated, {'; '.join(said)}: on loopback the client "
                "pays the kernel's TCP work too, so on two cores such a server outruns a "
                "one-core client. Their cost is in the fixed-offered-load table."
            )
    return lines + floor_observations(rendered)


def floor_observations(rendered: list) -> list[str]:
    """Closed loop: where the best home-made loop stands against the pure-Python floor."""
    figures = {
        r.row.variant if r.row.anchor else r.label: r.summary.stats["requests_per_s"].median
        for r in rendered
        if r.summary.status == "ok" and "requests_per_s" in r.summary.stats
    }
    floor = figures.get(FLOOR)
    home = [
        (r.summary.stats["requests_per_s"].median, r.label)
        for r in rendered
        if r.kind == "home-made"
        and r.summary.status == "ok"
        and "requests_per_s" in r.summary.stats
    ]
    if floor is None or not home:
        return []
    best, label = max(home)
    return [
        f"The best home-made loop ({label}) runs at {best / floor:.0%} of the bare-selectors floor."
    ]


def paced_observations(rendered: list) -> list[str]:
    """At a fixed load: the cheapest home-made loop against the floor and uvloop's Protocol."""
    cost = {
        r.label: r.summary.stats["server_cpu_us"].median
        for r in rendered
        if r.summary.status == "ok" and "server_cpu_us" in r.summary.stats
    }
    home = sorted(
        (cost[r.label], r.label) for r in rendered if r.kind == "home-made" and r.label in cost
    )
    lines = []
    if home:
        best, label = home[0]
        for anchor in (f"{FLOOR} (anchor)", f"{YARDSTICK} (anchor)"):
            if anchor in cost:
                lines.append(
                    f"{label} costs {best / cost[anchor]:.2f}× what {anchor} does per request "
                    f"({best:.1f} against {cost[anchor]:.1f} µs)."
                )
    generators = {r.summary.detail for r in rendered if r.summary.status == "ok"}
    if generators - {"native"}:
        lines.append(f"Generators in this table: {', '.join(sorted(generators))}.")
    return lines


def point_notes(params: dict, stored_points: dict) -> list[str]:
    """A paced point: the rate offered, and where it comes from (declared, or an old point's)."""
    if params.get("measure") != PACED or "rate" not in params:
        return []
    count = params["connections"]
    spread = f"{params['rate']:,.0f} requests/s over {count:,} connection{'s' * (count != 1)}"
    if params.get(DERIVED):
        where = (
            "an old point: its rate was derived from the slowest row's closed-loop figure in "
            "the session that measured it, not declared, so its figures compare only within "
            "this table"
        )
    else:
        where = (
            "declared in `bench/studies/echo/__init__.py`, the same in every session, quick and "
            "full"
        )
    return [
        f"*Offered load:* {spread}, {where}. Every request is scheduled and its latency counted "
        f"from its scheduled time; a row whose server completed fewer than {KEPT_RATE:.0%} of the "
        "scheduled requests could not keep the rate and has no figure."
    ]


def fixed_against_closed(stored_points: dict) -> list[str]:
    """Per row at the headline size and connection count: its server CPU per request at the
    declared fixed load over its closed-loop cost per request, both from one session (the
    figures alone: what makes the difference is not measured here, so no cause is claimed)."""

    def point(paced: bool) -> dict | None:
        for found in stored_points.values():
            params = found["params"]
            if (
                all(params.get(k) == v for k, v in HEADLINE_POINT.items())
                and (params.get("measure") == PACED) == paced
                and (not paced or params.get("rate") == HEADLINE_RATE)
                and not params.get(DERIVED)
                and not params.get(CURVE[0])
                and not params.get(TLS)
            ):
                return found
        return None

    closed, paced = point(False), point(True)
    if closed is None or paced is None:
        return []
    rises = []
    for key, entry in paced["rows"].items():
        other = closed["rows"].get(key)
        if other is None or other["session"] != entry["session"]:
            continue
        # Each side as its own table reads it: a closed-loop row whose load generator saturated
        # has no figure there, so it has none here (its server waited on the generator, and
        # its cost per request is not the loaded cost of the rows beside it).
        fixed = valid_values(entry["reps"], "server_cpu_us")
        loop = valid_values(other["reps"], "server_cpu_us")
        if fixed and loop:
            a, b = statistics.median(fixed), statistics.median(loop)
            rises.append((a / b, a, b, key.replace("/native", " (anchor)").replace("/", " · ")))
    if len(rises) < 2:
        return []
    rises.sort()
    low, high = rises[0], rises[-1]
    return [
        f"*Fixed load against closed loop* ({HEADLINE_AT}, {HEADLINE_RATE:,} requests/s, rows "
        f"measured in one session at both): server CPU per request at the fixed load is "
        f"{low[0]:.1f}× ({low[3]}: {low[1]:.1f} against {low[2]:.1f} µs) to {high[0]:.1f}× "
        f"({high[3]}: {high[1]:.1f} against {high[2]:.1f} µs) its closed-loop cost, median "
        f"{statistics.median(r[0] for r in rises):.1f}× over {len(rises)} rows.",
        "",
    ]


def section_end(stored_points: dict, sessions: dict | None = None) -> list[str]:
    """After echo's tables: fixed load against closed loop, then TLS's cost per request."""
    return fixed_against_closed(stored_points) + tls.lines(stored_points, sessions or {})


RENDERING = Rendering(
    detail_column=detail_column,
    detail=detail,
    point_notes=point_notes,
    observations=observations,
    section_end=section_end,
)
