"""The report's "Cost anatomy" section, rendered from the stored anatomy alone.

The counting (an untimed repetition per echo row, syscalls by kind, server CPU) is
:mod:`bench.studies.anatomy.measure`; this module reads what it stored (through :mod:`bench.store`)
and writes the table and, for each home-made loop, what its figures say against
:data:`bench.plan.YARDSTICK` and :data:`bench.plan.FLOOR`; for a server that enters io_uring
(the completions loop), its ``io_uring_enter`` calls and entries per enter beside the readiness
loops' syscalls by kind. Records stored before io_uring_enter was counted apart render as they
did, with "–" in the new columns.

Two points, two stores: the section opens with the fixed offered load (``anatomy.json``, the
report's headline regime) and, where ``anatomy-closed.json`` is stored, follows with the closed
loop (``python -m bench anatomy --closed-loop``, the server's maximum throughput) under a
heading of its own, with the same tables and notes. Every generated sentence below is true at
either point; what names one point (the introductions, where CPU per request is read otherwise)
is chosen by the point rendered.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from bench.plan import FLOOR, YARDSTICK, unavailable_variants
from bench.render.intervals import ratio_interval, worded
from bench.render.page import ELSEWHERE, Page
from bench.render.tables import session_said
from bench.store import load_file
from bench.studies.anatomy import FILES
from bench.studies.instructions import render_work as work
from bench.study import Rendering, SideStudy


def load_anatomy(results: Path, closed: bool = False) -> dict | None:
    """The stored cost anatomy at the fixed offered load, or in the closed loop; None where it
    is not stored."""
    return load_file(results, FILES[closed])


def explain(entry: dict, reference: dict | None, floor: dict | None) -> str:
    """What the figures of one row say, written from the figures alone."""
    s = entry["syscalls"]
    said = []
    if uring := entry.get("uring"):
        enters = s["io_uring_enter"]
        said.append(
            f"{enters:.3f} io_uring_enter per request ({_batching(enters)}), "
            f"{_per_enter(uring)}, and {s['wait'] + s['recv'] + s['send']:.2f} waits, "
            f"receives and sends: {s['total']:.2f} syscalls per request in all"
        )
    if s["recv_eagain"] >= 0.05:
        said.append(
            f"{s['recv_eagain']:.2f} receives per request failed with EAGAIN (optimistic reads "
            "that found nothing: a syscall and, in Python, an exception each)"
        )
    if s["epoll_ctl"] >= 0.05:
        said.append(f"{s['epoll_ctl']:.2f} epoll_ctl per request (registration churn)")
    ref_wait = reference["syscalls"]["wait"] if reference and "syscalls" in reference else None
    if uring:
        pass  # its waits are its enters, said above
    elif s["wait"] >= 0.5 or (
        ref_wait is not None and s["wait"] > max(2 * ref_wait, ref_wait + 0.1)
    ):
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
    mine, theirs = cpu_stat(entry), cpu_stat(reference) if reference else None
    if mine and theirs:
        # The anatomy interleaves its rows' repetitions, so the i-th of each share a turn.
        turns = [dict(enumerate(e["cpu_us_reps"])) for e in (entry, reference)]
        ratio = ratio_interval(*turns)
        said.append(
            f"CPU {_cpu_text(mine)} µs per request against {_cpu_text(theirs)} for {YARDSTICK}"
            + (f" ({worded(ratio)})" if ratio else "")
        )
    return "; ".join(said) + "."


def cpu_stat(entry: dict | None) -> tuple[float, float, float] | None:
    """A row's CPU per request as (median, min, max) over its repetitions, or None with fewer
    than MIN_CPU_REPS: one repetition is noise that would be read as a finding."""
    reps = (entry or {}).get("cpu_us_reps") or []
    if len(reps) < MIN_CPU_REPS:
        return None
    return statistics.median(reps), min(reps), max(reps)


def _cpu_text(stat: tuple[float, float, float]) -> str:
    return f"{stat[0]:.2f} [{stat[1]:.2f}–{stat[2]:.2f}]"


MIN_CPU_REPS = 3


def cpu_us(entry: dict) -> float:
    """Server CPU per request: the median of its repetitions where it has MIN_CPU_REPS or more
    (the loops' READMEs quote it), else the one counted repetition's scheduler figure (stored
    as its user and system shares, a split the table does not show)."""
    stat = cpu_stat(entry)
    return stat[0] if stat else entry["user_us"] + entry["system_us"]


def _batching(enters: float) -> str:
    """What enters per request say about batching."""
    if enters <= 1:
        per = 1 / enters  # the closed loop's batches run to thousands: no decimal
        return f"one crossing into the kernel per {per:,.{0 if per >= 100 else 1}f} requests"
    return "more than one enter per request: its turns found little to batch at this load"


def _per_enter(uring: dict) -> str:
    """ "N SQEs submitted and M CQEs reaped per enter", "?" for a figure not counted."""
    sub, reaped = uring.get("submitted_per_enter"), uring.get("reaped_per_enter")
    return (
        f"{'?' if sub is None else f'{sub:.2f}'} SQEs submitted and "
        f"{'?' if reaped is None else f'{reaped:.2f}'} CQEs reaped per enter"
    )


COMMAND = "`python -m bench anatomy` (then `python -m bench report`)"
CLOSED_COMMAND = "`python -m bench anatomy --closed-loop` (then `python -m bench report`)"
CLOSED_TITLE = "### Syscalls per echo request in the closed loop"
# Where a reader finds CPU per request when the anatomy has too few repetitions for its column:
# the echo section's table at the same point (by closed loop or not).
CPU_ELSEWHERE = {
    False: "the echo section's fixed-load table",
    True: "the echo section's closed-loop table",
}
COUNTERS = {
    "perf": "Counted by `perf stat` on the kernel's syscall tracepoints: the server ran "
    "at full speed, in the regime of the timed runs.",
    "strace": "Counted by `strace -f` (ptrace): the server ran several times slower "
    "than in the timed runs, so ready sockets piled up and waits and failed receives "
    "are rarer here than there.",
}


def section(data: dict | None, closed: dict | None = None) -> list[str]:
    """The report's "Cost anatomy" section, rendered from anatomy.json alone, followed by the
    closed loop's anatomy (anatomy-closed.json) where one is stored."""
    lines = ["## Cost anatomy", ""]
    if not data:
        lines += [f"Not measured in this tree yet: {COMMAND}.", ""]
    else:
        lines += [introduction(data), "", *body(data)]
    if closed:
        lines += [CLOSED_TITLE, "", closed_introduction(closed), "", *body(closed, closed=True)]
    return lines


def body(data: dict, closed: bool = False) -> list[str]:
    """One point's tables and notes (after its introduction): the counter, the syscalls table,
    the io_uring table, the notes loop by loop and the completion paragraphs."""
    lines = []
    tool = data.get("counter")
    if tool is None:
        return [*lines, f"No syscall counter ran: {data.get('unavailable')}.", ""]
    rows = data.get("rows", {})
    measured = [e for e in rows.values() if "error" not in e]
    with_cpu = bool(measured) and all(cpu_stat(e) for e in measured)
    cpu_head = "| CPU µs/req median [min–max] " if with_cpu else ""
    lines += [
        COUNTERS[tool],
        "",
        f"| row {cpu_head}| syscalls/req | waits | recv | EAGAIN recv | send | epoll_ctl |",
        "|---" + "|--:" * (6 + with_cpu) + "|",
    ]
    table, notes = table_rows(rows, with_cpu)
    lines += table
    switched = [e for e in measured if e.get("switches")]
    if switched:
        lines += [
            "",
            "| row | context switches/req: blocked + preempted |",
            "|---|--:|",
            *(f"| {e['label']} | {_switches_cell(e)} |" for e in switched),
        ]
    rings = [e for e in measured if e.get("uring") or e["syscalls"].get("io_uring_enter")]
    if rings:
        lines += [
            "",
            "| row | io_uring_enter | SQEs / CQEs per enter | other |",
            "|---|--:|--:|--:|",
            *(
                f"| {e['label']} | {_uring_cells(e)} | {e['syscalls']['other']:.3f} |"
                for e in rings
            ),
        ]
    env = data.get("environment")
    if env:
        lines += ["", f"*Ran in:* {session_said(str(data['date'])[:16], env)}."]
    if apart := measured_apart(data):
        lines += [
            "",
            "Measured again apart from the other rows (each such group compares with itself, "
            f"not with the rest): {apart}.",
        ]
    if unavailable_variants() and not closed:  # said once, as on the rest of the page
        lines += ["", f"No row for {', '.join(unavailable_variants())}: unavailable here."]
    if any(work.changed(k, e.get("code")) for k, e in rows.items() if "error" not in e):
        lines += [
            "",
            "‡ measured on code that has changed since (or before the anatomy recorded its "
            "code): `python -m bench anatomy --loop NAME` measures it again.",
        ]
    if any(e.get("kept_rate") is False for e in rows.values()):
        lines += ["", "† the server did not keep the offered rate: its figures are at saturation."]
    if notes:
        lines += ["", "What the figures say, loop by loop:", "", *notes]
    for paragraph in completion_against_readiness(rows, closed=closed):
        lines += ["", paragraph]
    return [*lines, ""]


def measured_apart(data: dict) -> str:
    """The rows measured on another date than the section's (``--loop`` runs), by date."""
    session = str(data.get("date", ""))[:16]
    later: dict[str, list[str]] = {}
    for entry in data.get("rows", {}).values():
        when = str(entry.get("date") or session)[:16]
        if when != session:
            later.setdefault(when, []).append(entry.get("label", "?"))
    return "; ".join(f"{' and '.join(labels)} on {when}" for when, labels in sorted(later.items()))


def introduction(data: dict) -> str:
    """What the section measured, where, how, and how far to trust it."""
    point = data["point"]
    return (
        f"Where each echo request's microseconds go, at {point['size'] // 1024} KiB × "
        f"{point['connections']} connections and the fixed offered load of the echo section "
        f"({point.get('rate', 0):,} requests/s), measured by {COMMAND} on {data['date']} in an "
        "untimed repetition per row: the server's CPU per request over a "
        f"{point['window_s']:g} s load window with nothing attached (the scheduler's exact "
        "figure) and its context switches, every thread's (a thread that blocked, or one "
        "the kernel preempted), then syscalls per request by kind over a second window. The "
        "CPU column is "
        f"shown only where every row has at least {MIN_CPU_REPS} repetitions (fresh servers, "
        "interleaved across rows), as median [min–max]; otherwise CPU per request is read in "
        f"{CPU_ELSEWHERE[False]} and this section reads the syscall counts alone. "
        "No user/system split (the kernel samples the mode at each tick, too coarse for "
        "servers that run in bursts of tens of microseconds) and no function-level profile "
        "(cProfile's per-call hook costs about as much as the calls these loops differ by)."
    )


def closed_introduction(data: dict) -> str:
    """What the closed-loop tables measured, and how the closed loop differs from the fixed
    load (the text holds whether or not the fixed load's anatomy is stored)."""
    point = data["point"]
    return (
        f"Syscalls and CPU per echo request in the closed loop, at {point['size'] // 1024} KiB × "
        f"{point['connections']} connections: each connection sends its next request as soon "
        "as its echo is back (no offered rate), so the server runs at its maximum throughput "
        "and a wake-up (a readiness wait, or an io_uring_enter) can find up to one request per "
        "connection ready: batches as large as the connections allow. This is the regime the "
        "completion loop's target is stated in; the fixed offered load is the report's "
        f"headline one. Measured by {CLOSED_COMMAND} on {data['date']} in untimed repetitions "
        f"(CPU over a {point['window_s']:g} s window with nothing attached, then syscalls over "
        f"a second; the CPU column only where every row has at least {MIN_CPU_REPS} "
        f"repetitions, otherwise CPU per request is read in {CPU_ELSEWHERE[True]}), stored "
        "apart from the fixed load's counts."
    )


def table_rows(rows: dict, with_cpu: bool = False) -> tuple[list[str], list[str]]:
    """The table's rows, and a note per home-made loop on what its figures say."""
    reference = next((e for e in rows.values() if e.get("label") == YARDSTICK), None)
    floor = next((e for e in rows.values() if e.get("label") == FLOOR), None)
    lines, notes = [], []
    for key, entry in rows.items():
        if "error" in entry:
            lines.append(f"| {entry['label']} | failed: {entry['error'][:80]} |" + " |" * 5)
            continue
        s = entry["syscalls"]
        mark = ("‡" if work.changed(key, entry.get("code")) else "") + (
            " †" if entry.get("kept_rate") is False else ""
        )
        cpu = f"| {_cpu_text(cpu_stat(entry))} " if with_cpu else ""
        lines.append(
            f"| {entry['label']}{mark} {cpu}| {s['total']:.2f} | {s['wait']:.3f} "
            f"| {s['recv']:.2f} | {s['recv_eagain']:.2f} | {s['send']:.2f} "
            f"| {s['epoll_ctl']:.3f} |"
        )
        if entry["kind"] == "home-made":
            notes.append(f"- **{entry['label']}**: {explain(entry, reference, floor)}")
    return lines, notes


def _switches_cell(entry: dict) -> str:
    """Context switches per request, in all, then blocked + preempted."""
    blocked, preempted = entry["switches"]["voluntary"], entry["switches"]["involuntary"]
    return f"{blocked + preempted:.2f} ({blocked:.2f} + {preempted:.2f})"


def _uring_cells(entry: dict) -> str:
    """The io_uring_enter column and the entries-per-enter column of one row: "–" where the
    record predates io_uring_enter's own column or the server entered no ring."""
    s, uring = entry["syscalls"], entry.get("uring")
    enters = f"{s['io_uring_enter']:.3f}" if "io_uring_enter" in s else "–"
    if not uring:
        return f"{enters} | –"
    sub, reaped = uring.get("submitted_per_enter"), uring.get("reaped_per_enter")
    return f"{enters} | {_figure(sub)} / {_figure(reaped)}"


def _figure(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}"


SUBMITTED_FROM = {
    "return values": "the sum of the enters' return values, the SQEs each call consumed",
    "ring": "the ring's own count of SQEs consumed, its SqHead in /proc/PID/fdinfo: perf stat "
    "counts calls, not their return values",
}


def _span(values: list[float], fmt: str) -> str:
    """ "a to b", or "a" where they are equal at this precision."""
    low, high = format(min(values), fmt), format(max(values), fmt)
    return low if low == high else f"{low} to {high}"


def _completes(entry: dict) -> bool:
    """A server whose data moves through io_uring: it entered a ring, and its receives and
    sends are not syscalls. (libuv enters a ring too, to batch its epoll_ctl calls, while its
    reads and writes stay syscalls: uvloop is a readiness loop.)"""
    s = entry["syscalls"]
    return bool(entry.get("uring")) and s["recv"] + s["send"] < COMPLETES_BELOW


COMPLETES_BELOW = 0.5  # receives and sends per request: a readiness loop makes about two


def completion_against_readiness(rows: dict, closed: bool = False) -> list[str]:
    """A paragraph per row whose server entered io_uring: its syscalls per request by kind
    beside the readiness rows' of the same table, and what the difference means. A table with
    no readiness row still gets the paragraph, without the comparisons. `closed`: the rows are
    the closed loop's (where CPU per request is read otherwise)."""
    measured = [e for e in rows.values() if "error" not in e and "syscalls" in e]
    readiness = [e for e in measured if not _completes(e)]
    paragraphs = []
    for entry in filter(_completes, measured):
        said = [f"**Completion against readiness ({entry['label']}).**"]
        if readiness:
            said.append(_readiness_syscalls(readiness))
        said.append(_ring_syscalls(entry, readiness))
        said.append(_what_the_ring_saves(entry, readiness, closed))
        if entry["uring"].get("reaped_per_enter") is not None:
            said.append(_reaping(entry["uring"]["reaped_per_enter"]))
        paragraphs.append(" ".join(said))
    return paragraphs


def _plural(readiness: list[dict], many: str, one: str) -> str:
    return many if len(readiness) > 1 else one


def _fewest(readiness: list[dict]) -> dict:
    """The readiness row with the fewest syscalls per request."""
    return min(readiness, key=lambda e: e["syscalls"]["total"])


def _readiness_syscalls(readiness: list[dict]) -> str:
    """The readiness rows' syscalls per request: in all, moving data, and waiting."""
    low, high = _fewest(readiness), max(readiness, key=lambda e: e["syscalls"]["total"])
    totals = [e["syscalls"]["total"] for e in readiness]
    moved = [e["syscalls"]["recv"] + e["syscalls"]["send"] for e in readiness]
    waits = [e["syscalls"]["wait"] for e in readiness]
    names = (
        low["label"]
        if low is high
        else f"{len(readiness)} rows; fewest {low['label']}, most {high['label']}"
    )
    return (
        f"The readiness {_plural(readiness, 'rows', 'row')} of this table "
        f"({names}) {_plural(readiness, 'make', 'makes')} "
        f"{_span(totals, '.2f')} syscalls per "
        f"request: {_span(moved, '.2f')} receives and sends, the data moving inside "
        f"those calls, and {_span(waits, '.3f')} waits, one per wake-up, shared by "
        "the requests found ready at once."
    )


def _in_the_ring(s: dict) -> str:
    """Which of the ring row's receives and sends are entries in the ring, from its counts: a
    loop that tries its sends first (the completions loop's sendall) makes them syscalls, and
    one that tries its receives before any SQE (its recv, at the task's next turn) makes those
    tries syscalls."""
    sends = f"its sends are syscalls ({s['send']:.2f} per request: each send is tried first)"
    if s["recv"] >= 0.05:
        failed = s.get("recv_eagain", 0.0)
        receives = (
            f"Its receives are tried with recv(2) before any SQE, {s['recv']:.2f} recv "
            "syscalls per request "
            f"({failed:.2f} of them finding nothing), what they did not take entries in the ring"
        )
        if s["send"] >= 0.05:
            return f"{receives}, and {sends}"
        return f"{receives}, and its sends are entries in the ring"
    if s["send"] >= 0.05:
        return f"Its receives are entries in the ring, not syscalls, and {sends}"
    return "Its receives and sends are entries in the ring, not syscalls"


def _ring_syscalls(entry: dict, readiness: list[dict]) -> str:
    """The ring row's syscalls per request by kind, what an enter does, and (against the
    readiness rows, where there are any) how many fewer syscalls that makes."""
    s, uring = entry["syscalls"], entry["uring"]
    enters = s["io_uring_enter"]
    text = (
        f"{entry['label']} makes {s['total']:.2f}: {enters:.3f} io_uring_enter, "
        f"{s['wait']:.3f} waits, {s['recv']:.2f} receives, {s['send']:.2f} sends and "
        f"{s['other']:.3f} other. {_in_the_ring(s)}: each enter submitted "
        f"{_figure(uring.get('submitted_per_enter'))} SQEs "
        f"({SUBMITTED_FROM[uring.get('submitted_from', 'ring')]}) and, when nothing was "
        "ready to run, waited for completions: the enter is also its wait"
    )
    if readiness:
        waits = [e["syscalls"]["wait"] for e in readiness]
        text += (
            f", {enters:.3f} per request against the readiness "
            f"{_plural(readiness, 'rows', 'row')}' {_span(waits, '.3f')} waits"
        )
    if uring.get("waiting") is not None and uring.get("enters"):
        share = uring["waiting"] / uring["enters"]
        text += (
            f" ({share:.0%} of its enters asked for a completion, the others only "
            "submitted: a turn that still had tasks to run hands its new entries to the "
            "kernel without waiting)"
        )
        if readiness:
            low = _fewest(readiness)
            fewer = low["syscalls"]["total"] / s["total"] if s["total"] else 0
            text += (
                f". In all, {fewer:.1f}× fewer syscalls per request than the fewest of the "
                "readiness rows"
                if fewer >= 1
                else f". In all, more syscalls per request than {low['label']}: its enters "
                "batch too few operations at this load to make up for the receives and sends"
                " they replace"
            )
    return text + "."


def _what_the_ring_saves(entry: dict, readiness: list[dict], closed: bool = False) -> str:
    """What the ring saves, and its CPU per request against the readiness rows'."""
    text = (
        "The kernel still performs every receive and send; what the ring saves is a "
        "crossing per operation and the separate readiness wait, so what that is worth "
        "shows in CPU per request"
    )
    cpu = [stat[0] for e in readiness if (stat := cpu_stat(e))]
    if cpu and cpu_stat(entry):
        text += (
            f": {_cpu_text(cpu_stat(entry))} µs per request (median [range] of its "
            f"repetitions) against medians of {_span(cpu, '.2f')}"
        )
    else:
        text += f" ({CPU_ELSEWHERE[closed]})"
    return text + "."


def _reaping(reaped: float) -> str:
    """How the CQEs reaped per enter are counted, and why they check the SQEs submitted."""
    return (
        "Reaping is no syscall (the loop reads completions from memory it shares with "
        f"the kernel), so the {reaped:.2f} CQEs reaped per enter are read from outside: "
        "the ring's CqHead in /proc/PID/fdinfo before and after the counted window. "
        "This loop submits no multishot operation and sets no CQE-skipping flag, so "
        "every SQE completes exactly once with one CQE: over a window reaped ≈ "
        "submitted, and the two figures agreeing checks the count."
    )


def page_section(study: SideStudy, page: Page) -> list[str]:
    """The anatomy's part of the page: the fixed load's table, then the closed loop's."""
    closed = load_anatomy(page.results, closed=True) if page.results else None
    fixed = page.own(page.anatomy_data)
    if page.anatomy_data and fixed is None:
        return ["## Cost anatomy", "", ELSEWHERE, ""]
    return section(fixed, page.own(closed))


RENDERING = Rendering(section=page_section)
