"""The report's "Cost anatomy" section, rendered from the stored anatomy alone.

The counting (an untimed repetition per echo row, syscalls by kind, user and system CPU) is
:mod:`bench.measure.anatomy`; this module reads what it stored (through :mod:`bench.store`)
and writes the table and, for each home-made loop, what its figures say against
:data:`bench.plan.YARDSTICK` and :data:`bench.plan.FLOOR`.
"""

from __future__ import annotations

from bench.plan import FLOOR, YARDSTICK, unavailable_variants


def explain(entry: dict, reference: dict | None, floor: dict | None) -> str:
    """What the figures of one row say, written from the figures alone."""
    s = entry["syscalls"]
    said = []
    if s["recv_eagain"] >= 0.05:
        said.append(
            f"{s['recv_eagain']:.2f} receives per request failed with EAGAIN (optimistic reads "
            "that found nothing: a syscall and, in Python, an exception each)"
        )
    if s["epoll_ctl"] >= 0.05:
        said.append(f"{s['epoll_ctl']:.2f} epoll_ctl per request (registration churn)")
    ref_wait = reference["syscalls"]["wait"] if reference and "syscalls" in reference else None
    if s["wait"] >= 0.5 or (ref_wait is not None and s["wait"] > max(2 * ref_wait, ref_wait + 0.1)):
        said.append(
            f"{s['wait']:.2f} waits per request"
            + (f" against {ref_wait:.2f} for {YARDSTICK}" if ref_wait is not None else "")
            + f" (about {1 / s['wait']:.1f} requests served per wake-up)"
        )
    if not said:
        said.append(f"{s['total']:.2f} syscalls per request")
        if floor and "syscalls" in floor:
            said[-1] += (
                f", {s['total'] - floor['syscalls']['total']:+.2f} against the selectors floor"
            )
    if reference and "user_us" in reference:
        python = entry["user_us"] - reference["user_us"]
        said.append(
            f"user CPU {entry['user_us']:.2f} µs per request against "
            f"{reference['user_us']:.2f} for {YARDSTICK} ({python:+.2f} µs of Python), "
            f"system {entry['system_us']:.2f} against {reference['system_us']:.2f}"
        )
    return "; ".join(said) + "."


COMMAND = "`python -m bench anatomy` (then `python -m bench report`)"
COUNTERS = {
    "perf": "Counted by `perf stat` on the kernel's syscall tracepoints: the server ran "
    "at full speed, in the regime of the timed runs.",
    "strace": "Counted by `strace -f` (ptrace): the server ran several times slower "
    "than in the timed runs, so ready sockets piled up and waits and failed receives "
    "are rarer here than there.",
}


def section(data: dict | None) -> list[str]:
    """The report's "Cost anatomy" section, rendered from anatomy.json alone."""
    lines = ["## Cost anatomy", ""]
    if not data:
        return [*lines, f"Not measured in this tree yet: {COMMAND}.", ""]
    lines += [introduction(data), ""]
    tool = data.get("counter")
    if tool is None:
        return [*lines, f"No syscall counter ran: {data.get('unavailable')}.", ""]
    lines += [
        COUNTERS[tool],
        "",
        "| row | CPU µs/req | user µs | system µs | user share | × "
        + YARDSTICK
        + " | syscalls/req | waits | recv | EAGAIN recv | send | epoll_ctl | other |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    rows = data.get("rows", {})
    table, notes = table_rows(rows)
    lines += table
    for name, why in unavailable_variants().items():  # it would have a row: say why it has none
        lines.append(f"| {name} | {why} |" + " |" * 11)
    if any(e.get("kept_rate") is False for e in rows.values()):
        lines += ["", "† the server did not keep the offered rate: its figures are at saturation."]
    if notes:
        lines += ["", "What the figures say, loop by loop:", "", *notes]
    return [*lines, ""]


def introduction(data: dict) -> str:
    """What the section measured, where, how, and how far to trust it."""
    point = data["point"]
    return (
        f"Where each echo request's microseconds go, at {point['size'] // 1024} KiB × "
        f"{point['connections']} connections and the fixed offered load of the echo section "
        f"({point.get('rate', 0):,} requests/s), measured by {COMMAND} on {data['date']} in an "
        "untimed repetition per row: the server's user and system CPU per request over a "
        f"{point['window_s']:g} s load window with nothing attached (user is the Python the "
        "loop runs, system the kernel's socket work), then syscalls per request by kind over "
        "a second window. The user/system split is the kernel's tick sampling over that window "
        "(read it to about ±10%); their sum is the scheduler's exact figure. No function-level "
        "profile: cProfile's per-call hook costs about as much as the small calls these loops "
        "differ by, so it would inflate the call-heavy loops most (`python -X perf` with "
        "`perf record`, Python 3.12+, gives one by hand). The CPU columns come from this one "
        "repetition per row, on a machine others may share: the echo section's medians rank "
        "the loops; this table says where their microseconds go."
    )


def table_rows(rows: dict) -> tuple[list[str], list[str]]:
    """The table's rows, and a note per home-made loop on what its figures say."""
    reference = next((e for e in rows.values() if e.get("label") == YARDSTICK), None)
    floor = next((e for e in rows.values() if e.get("label") == FLOOR), None)
    base = None
    if reference and "user_us" in reference:
        base = reference["user_us"] + reference["system_us"]
    lines, notes = [], []
    for entry in rows.values():
        if "error" in entry:
            lines.append(f"| {entry['label']} | failed: {entry['error'][:80]} |" + " |" * 11)
            continue
        s = entry["syscalls"]
        cpu = entry["user_us"] + entry["system_us"]
        mark = " †" if entry.get("kept_rate") is False else ""
        lines.append(
            f"| {entry['label']}{mark} | {cpu:.2f} | {entry['user_us']:.2f} "
            f"| {entry['system_us']:.2f} "
            f"| {entry['user_us'] / cpu:.0%} | {f'{cpu / base:.2f}' if base else '–'} "
            f"| {s['total']:.2f} | {s['wait']:.3f} | {s['recv']:.2f} | {s['recv_eagain']:.2f} "
            f"| {s['send']:.2f} | {s['epoll_ctl']:.3f} | {s['other']:.3f} |"
        )
        if entry["kind"] == "home-made":
            notes.append(f"- **{entry['label']}**: {explain(entry, reference, floor)}")
    return lines, notes
