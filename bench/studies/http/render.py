"""HTTP, the rendering side: what a table's figures say about the loops under uvicorn."""

from __future__ import annotations

from bench.study import Rendering

HOME_MADE, FLOOR_LOOP, FAST_LOOP = "callbacks", "asyncio", "uvloop"  # the sentence's three


def observations(params: dict, rendered: list) -> list[str]:
    """Where the pure-Python loop stands between asyncio and uvloop, in CPU per request."""
    cost = {
        r.row.variant: r.summary.stats["server_cpu_us"].median
        for r in rendered
        if r.summary.status == "ok" and "server_cpu_us" in r.summary.stats
    }
    if not {HOME_MADE, FLOOR_LOOP, FAST_LOOP} <= cost.keys():
        return []
    mine, floor, fast = cost[HOME_MADE], cost[FLOOR_LOOP], cost[FAST_LOOP]
    if floor == fast:
        where = "at both (they cost the same)"
    else:
        share = (floor - mine) / (floor - fast)  # 0: asyncio's cost, 1: uvloop's
        where = (
            f"{share:.0%} of the way from asyncio's cost to uvloop's"
            if 0 <= share <= 1
            else ("cheaper than uvloop" if share > 1 else "dearer than asyncio")
        )
    return [
        f"Under a real server, the pure-Python callbacks loop (its asyncio drop-in) costs "
        f"{mine:.1f} µs of server CPU per request, against asyncio's {floor:.1f} and uvloop's "
        f"{fast:.1f}: {where}."
    ]


RENDERING = Rendering(
    observations=observations,
)
