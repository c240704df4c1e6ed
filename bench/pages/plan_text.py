"""The quick and the full run in words, from the studies' declarations.

bench/README.md describes what each run measures; a paragraph that retyped the points went
stale the day a point was added, so ``python -m bench report`` renders it into the README's
``<!-- figures:plan -->`` block from the declarations in ``bench/studies/`` (see
:mod:`bench.pages.reading`).
"""

from __future__ import annotations

from bench import registry
from bench.headline import CURVE, HEADLINE_AT, LOADED_RATE, PACED, TLS, size_text
from bench.studies import crawler, http, latency, sleep


def _n(value: int) -> str:
    """1000 -> "1 000", as the lab's prose writes counts."""
    return f"{value:,}".replace(",", " ")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _s(seconds: float) -> str:
    return f"{seconds:g} s"


def ladder(full: bool) -> str:
    """The latency ladder in words: its rates, a step's length, where a row stops."""
    warm, measured = latency.TIMING[full]
    return (
        f"the latency ladder at {HEADLINE_AT}: offered rates from "
        f"{_n(latency.RATES[0])} requests/s × {latency.FACTOR:g} a step to "
        f"{_n(latency.RATES[-1])} ({len(latency.RATES)} steps), {_s(measured)} a step after "
        f"{_s(warm)} of warm-up, each row up to the step that ends its climb"
    )


def echo_points(full: bool) -> tuple[list[dict], list[dict]]:
    """Echo's plain points in a run, as declared (its own folder's): closed loop, then fixed
    load at declared rates (its full run's cost curve and TLS left out)."""
    points = [point.args for point in registry.get("echo").points(full)]
    plain = [p for p in points if not p.get(TLS) and not p.get(CURVE[0])]
    return [p for p in plain if "measure" not in p], [p for p in plain if p.get("measure") == PACED]


def plan() -> str:
    """What the quick run measures, then what the full run adds."""
    closed, fixed = echo_points(False)
    sizes = sorted({point["size"] for point in closed})
    conns = [_n(point["connections"]) for point in closed]
    warm, measured = closed[0]["warmup_s"], closed[0]["duration_s"]
    paced = fixed[0]["duration_s"]
    closed_full = echo_points(True)[0]
    full_warm, full_measured = closed_full[0]["warmup_s"], closed_full[0]["duration_s"]
    crawl_delays = sorted({delay for delay, _ in crawler.QUICK_POINTS})
    workers = [_n(w) for _, w in crawler.QUICK_POINTS]
    more_sleepers = [n for n in sleep.TASKS[True] if n not in sleep.TASKS[False]]
    more_cancel = [n for n in sleep.CANCEL_TASKS[True] if n not in sleep.CANCEL_TASKS[False]]
    more_delays = [d for d in crawler.FULL["delays"] if d not in crawl_delays]
    more_workers = [w for w in crawler.FULL["concurrency"] if str(w) not in workers]
    sizes_full = sorted({point["size"] for point in closed_full})
    conns_full = sorted({point["connections"] for point in closed_full})
    answers = (
        "without latency" if more_delays == [0] else f"at {_and([f'{d} ms' for d in more_delays])}"
    )
    return (
        f"The quick run: echo with {_and([size_text(s) for s in sizes])} messages over "
        f"{_and(conns)} connections, both measures (closed loop: {_s(measured)} measured after "
        f"{_s(warm)} of warm-up; fixed offered load: {_s(paced)}), {HEADLINE_AT} at a loaded "
        f"fixed rate of {_n(LOADED_RATE)} requests/s, and over TLS in both measures; sleep with "
        f"{_and([_n(n) for n in sleep.TASKS[False]])} sleepers, the cancel-heavy run at "
        f"{_and([_n(n) for n in sleep.CANCEL_TASKS[False]])} and the idle run with "
        f"{_and([_n(n) for n in sleep.IDLE_SOCKETS[False]])} idle sockets; the crawler on the "
        f"{_n(crawler.PAGES)}-page site with {_and([f'{d} ms' for d in crawl_delays])} per "
        f"answer and {_and(workers)} workers; http with "
        f"{_and([_n(c) for c in http.CONNECTIONS[False]])} keep-alive connections for "
        f"{_s(http.SECONDS[False])} after {_s(http.WARMUP_S)} of warm-up; the micro "
        f"operations; {ladder(False)}. The full run adds every size and connection count "
        f"({size_text(sizes_full[0])} to {size_text(sizes_full[-1])} × "
        f"{_n(conns_full[0])} to {_n(conns_full[-1])} connections, "
        f"{len(sizes_full) * len(conns_full) * 2} plain echo points with both measures, each "
        f"{_s(full_measured)} measured after {_s(full_warm)} of warm-up), "
        f"{_and([_n(n) for n in more_sleepers])} sleepers, cancel-heavy at "
        f"{_and([_n(n) for n in more_cancel])}, idle with "
        f"{_n(sleep.IDLE_SOCKETS[True][0])} to {_n(sleep.IDLE_SOCKETS[True][-1])} sockets, the "
        f"crawler {answers} and with "
        f"{_and([_n(w) for w in more_workers])} worker{'s' if more_workers != [1] else ''}, "
        f"{latency.REPETITIONS[True]} rounds of the latency ladder at "
        f"{_s(latency.TIMING[True][1])} a step after {_s(latency.TIMING[True][0])}, "
        f"and more repetitions where the spread asks for them."
    )
