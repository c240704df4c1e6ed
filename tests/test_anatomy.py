"""The cost anatomy: its parsers, its counters on a real server, and the section it renders."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench.fingerprint import fingerprint
from bench.studies.anatomy import FILES
from bench.studies.anatomy import measure as anatomy
from bench.studies.anatomy.render import completion_against_readiness, load_anatomy, section
from machine.environment import ROOT

STRACE_LOG = """\
4242  epoll_wait(3, [{events=EPOLLIN, data={u32=7, u64=7}}], 1024, -1) = 1
4242  recvfrom(7, "hello", 65536, 0, NULL, NULL) = 5
4242  sendto(7, "hello", 5, 0, NULL, 0) = 5
4242  recvfrom(7, 0x7f, 65536, 0, NULL, NULL) = -1 EAGAIN (Resource temporarily unavailable)
4242  epoll_ctl(3, EPOLL_CTL_MOD, 7, {events=EPOLLIN, data={u32=7, u64=7}}) = 0
4243  read(9,  <unfinished ...>
4242  write(10, "\\0", 1)                    = 1
4243  <... read resumed>0x7f, 4096)         = -1 EAGAIN (Resource temporarily unavailable)
4242  --- SIGTERM {si_signo=SIGTERM, si_code=SI_USER, si_pid=1, si_uid=0} ---
4242  close(7)                              = 0
4242  +++ exited with 0 +++
"""

PERF_OUTPUT = """\
# started on Mon Nov 23 01:40:00 2026

851,,syscalls:sys_enter_epoll_wait,1491728482,100.00,,
166339,,syscalls:sys_enter_recvfrom,1491726420,100.00,,
83243,,syscalls:sys_enter_sendto,1491725407,100.00,,
12,,syscalls:sys_enter_epoll_ctl,1491724846,100.00,,
<not counted>,,syscalls:sys_enter_select,0,100.00,,
83097,,syscalls:sys_exit_recvfrom,1491722892,100.00,,
250500,,raw_syscalls:sys_enter,1491723973,100.00,,
"""


def test_strace_log_counts_calls_once_and_failed_receives():
    counts = anatomy.parse_strace(STRACE_LOG)
    assert counts.calls == {
        "epoll_wait": 1,
        "recvfrom": 2,
        "sendto": 1,
        "epoll_ctl": 1,
        "read": 1,  # counted where it started, not again where it resumed
        "write": 1,
        "close": 1,
    }
    assert counts.eagain == {"recvfrom": 1, "read": 1}  # the resumed read's result too


def test_per_request_groups_calls_by_kind():
    per = anatomy.parse_strace(STRACE_LOG).per_request(requests=2)
    assert per == {
        "wait": 0.5,
        "recv": 1.5,  # two recvfrom and a read
        "recv_eagain": 1.0,
        "send": 1.0,  # sendto and write
        "epoll_ctl": 0.5,
        "io_uring_enter": 0.0,
        "other": 0.5,  # close
        "total": 4.0,
    }


def test_perf_output_counts_named_calls_and_the_rest_as_other():
    counts = anatomy.parse_perf(PERF_OUTPUT)
    assert counts.calls["recvfrom"] == 166339
    assert counts.calls["select"] == 0  # "<not counted>" is no figure
    assert counts.eagain == {"recvfrom": 83097}
    per = counts.per_request(83243)
    assert per["total"] == pytest.approx(250500 / 83243)
    assert per["other"] == pytest.approx((250500 - 851 - 166339 - 83243 - 12) / 83243)
    assert per["recv_eagain"] == pytest.approx(83097 / 83243)


URING_STRACE_LOG = """\
5151  io_uring_enter(6, 3, 1, IORING_ENTER_GETEVENTS|IORING_ENTER_EXT_ARG, 0x7f, 24) = 3
5151  io_uring_enter(6, 0, 1, IORING_ENTER_GETEVENTS, 0x7f, 24) = -1 ETIME (Timer expired)
5152  write(8, "\\1\\0\\0\\0\\0\\0\\0\\0", 8) = 8
5151  io_uring_enter(6, 2, 1, IORING_ENTER_GETEVENTS|IORING_ENTER_EXT_ARG, 0x7f, 24 <unfinished ...>
5151  <... io_uring_enter resumed>)         = 2
5151  io_uring_enter(6, 1, 0, 0, NULL, 0)   = 1
"""  # fmt: skip


def test_strace_log_counts_io_uring_enter_apart_and_sums_the_entries_it_submitted():
    counts = anatomy.parse_strace(URING_STRACE_LOG)
    assert counts.calls == {"io_uring_enter": 4, "write": 1}
    assert counts.submitted == 6  # 3 + 2 (read where it resumed) + 1; a failed enter took none
    assert counts.waiting == 3  # min_complete 1; the last one only submitted
    per = counts.per_request(requests=2)
    assert per["io_uring_enter"] == 2.0 and per["other"] == 0.0 and per["send"] == 0.5
    counts.ring = {"sq_consumed": 6, "cq_posted": 7, "cq_reaped": 8}
    uring = counts.per_enter()
    assert uring["submitted_from"] == "return values"
    assert uring["submitted_per_enter"] == 1.5 and uring["reaped_per_enter"] == 2.0
    assert anatomy.parse_strace(STRACE_LOG).per_enter() is None  # no ring, no figures


def test_under_perf_the_submitted_entries_are_the_rings_own_count():
    counts = anatomy.parse_perf(
        PERF_OUTPUT.rstrip() + "\n400,,syscalls:sys_enter_io_uring_enter,1491724846,100.00,,\n"
    )
    assert counts.calls["io_uring_enter"] == 400 and counts.submitted is None
    counts.ring = {"sq_consumed": 1000, "cq_posted": 1000, "cq_reaped": 990}
    uring = counts.per_enter()
    assert uring["submitted_from"] == "ring"
    assert uring["submitted_per_enter"] == 2.5 and uring["reaped_per_enter"] == 990 / 400


def test_ring_counts_are_deltas_of_each_ring_once_across_the_32_bit_wrap():
    before = {"11": {"SqHead": 2**32 - 2, "CqTail": 5, "CqHead": 4}, "12": dict.fromkeys(
        anatomy._RING_FIELDS, 0)}  # fmt: skip
    after = {"11": {"SqHead": 3, "CqTail": 10, "CqHead": 10}, "13": {}}  # 12 gone, 13 new
    assert anatomy.ring_counts(before, after) == {
        "sq_consumed": 5,
        "cq_posted": 5,
        "cq_reaped": 6,
    }
    assert anatomy.ring_counts({}, after) is None


def test_ring_states_reads_a_live_rings_counters_once_per_ring():
    uring = pytest.importorskip("loops.completions.uring")
    try:
        ring = uring.Ring(8, 16)
    except OSError as error:
        pytest.skip(f"io_uring unusable here: {uring.why(error)}")
    try:
        before = anatomy.ring_states(os.getpid())
        assert len(before) == 1  # its mmaps dup the fd: still one ring
        for _ in range(3):
            ring.prepare(uring.OP_NOP, user_data=7)
        assert ring.enter(None) == 3
        assert len(ring.reap()) == 3
        after = anatomy.ring_states(os.getpid())
        assert anatomy.ring_counts(before, after) == {
            "sq_consumed": 3,
            "cq_posted": 3,
            "cq_reaped": 3,
        }
    finally:
        ring.close()


def _entry(label, kind, user, system, eagain=0.0, epoll_ctl=0.0):
    syscalls = dict.fromkeys(anatomy.COLUMNS, 0.0)
    syscalls.update(recv=1 + eagain, send=1.0, recv_eagain=eagain, epoll_ctl=epoll_ctl)
    syscalls["total"] = 2 + eagain + epoll_ctl
    return {"label": label, "kind": kind, "user_us": user, "system_us": system,
            "syscalls": syscalls}  # fmt: skip


def _stored(counter="perf"):
    rows = {
        "uvloop-protocol/native": _entry("uvloop-protocol", "anchor", 1.5, 6.5),
        "traps/coroutines": _entry("traps · coroutines", "home-made", 5.0, 8.0, eagain=1.0),
        "roundrobin/coroutines": _entry(
            "roundrobin · coroutines", "home-made", 3.0, 7.0, epoll_ctl=0.4
        ),
    }
    for key, entry in rows.items():  # measured on today's code
        entry["code"] = _code(key)
    return {
        "counter": counter,
        "unavailable": "",
        "date": "2026-11-23T02:00:00+00:00",
        "point": {"size": 1024, "connections": 100, "window_s": 1.0},
        "rows": rows,
    }


def _code(key: str) -> str:
    from bench import registry
    from bench.plan import Row

    variant, style = key.split("/")
    return fingerprint(registry.get("echo"), Row(variant, style, style == "native"))


def test_a_row_measured_on_code_changed_since_is_marked():
    data = _stored()
    data["rows"]["traps/coroutines"]["code"] = "0123456789abcdef"
    del data["rows"]["uvloop-protocol/native"]["code"]  # stored before rows recorded it
    text = "\n".join(section(data))
    assert "| traps · coroutines‡ |" in text and "| uvloop-protocol‡ |" in text
    assert "| roundrobin · coroutines |" in text
    assert "‡ measured on code that has changed since" in text


def test_section_writes_the_table_and_what_each_loops_figures_say():
    text = "\n".join(section(_stored()))
    assert "## Cost anatomy" in text and "perf stat" in text
    # One CPU repetition per row: no CPU column and no CPU sentence (one repetition is noise),
    # syscalls first.
    assert re.search(r"\| traps · coroutines \| 3\.00 \| 0\.000 \| 2\.00 \| 1\.00 \|", text)
    assert "CPU µs/req" not in text
    # The kernel's user/system split swings between windows: the table shows the exact sum.
    assert "| user µs |" not in text and "| user share |" not in text
    traps = next(line for line in text.splitlines() if line.startswith("- **traps"))
    assert "1.00 receives per request failed with EAGAIN" in traps
    assert "CPU" not in traps
    assert "of Python" not in traps
    roundrobin = next(line for line in text.splitlines() if line.startswith("- **roundrobin"))
    assert "0.40 epoll_ctl per request" in roundrobin
    assert "- **uvloop" not in text  # anchors are the yardstick, not explained
    assert "†" not in text


def test_context_switches_per_request_show_in_all_then_blocked_and_preempted():
    data = _stored()
    data["rows"]["traps/coroutines"]["switches"] = {"voluntary": 0.04, "involuntary": 0.01}
    text = "\n".join(section(data))
    assert "| row | context switches/req: blocked + preempted |" in text
    assert "| traps · coroutines | 0.05 (0.04 + 0.01) |" in text
    # A record counted before switches were read has no line there (not a zero).
    switches = text.split("context switches/req")[1].split("\n\n")[0]  # that table alone
    assert "traps" in switches and "roundrobin" not in switches
    assert "context switches/req" not in "\n".join(section(_stored()))  # none read: no table


def test_context_switches_are_every_threads_blocks_and_preemptions():
    import threading

    from machine.proc import context_switches

    before = context_switches()
    handoff = [threading.Event(), threading.Event()]

    def other():
        for _ in range(50):
            handoff[0].wait()
            handoff[0].clear()
            handoff[1].set()

    thread = threading.Thread(target=other)
    thread.start()
    for _ in range(50):  # each handoff blocks one thread until the other wakes it
        handoff[0].set()
        handoff[1].wait()
        handoff[1].clear()
    thread.join()
    after = context_switches()
    assert after[0] - before[0] >= 50 and after[1] >= before[1] >= 0
    assert context_switches(2**22 + 1) is None  # above pid_max: no such process


def test_the_cpu_column_shows_three_repetitions_with_their_range_or_nothing():
    data = _stored()
    for entry, base in zip(data["rows"].values(), (8.0, 13.0, 10.0), strict=True):
        entry["cpu_us_reps"] = [base - 0.5, base, base + 0.5]
    text = "\n".join(section(data))
    assert "| row | CPU µs/req median [min–max] | syscalls/req |" in text
    assert "| traps · coroutines | 13.00 [12.50–13.50] | 3.00 |" in text
    traps = next(line for line in text.splitlines() if line.startswith("- **traps"))
    assert "CPU 13.00 [12.50–13.50] µs per request against 8.00 [7.50–8.50]" in traps
    # The ratio by the one method every page uses, the repetitions paired by their turn.
    assert "for uvloop-protocol (×1.63 [" in traps and traps.endswith("], dearer).")
    del data["rows"]["traps/coroutines"]["cpu_us_reps"][-1]  # two: not enough for a column
    assert "CPU µs/req" not in "\n".join(section(data))
    for line in section(data):
        assert not line.startswith("|") or line.count("|") - 1 <= 8  # at most 8 columns


def _with_completions(data):
    """A stored anatomy with a completions row, as `bench anatomy` writes it under strace."""
    entry = _entry("completions · coroutines", "home-made", 4.0, 5.0)
    entry["syscalls"].update(recv=0.0, send=0.0, io_uring_enter=0.25, other=0.01, total=0.26)
    entry["uring"] = {"enters": 500, "submitted_from": "return values", "submitted": 4000,
                      "waiting": 200, "sq_consumed": 4000, "cq_posted": 4000, "cq_reaped": 3990,
                      "submitted_per_enter": 8.0, "reaped_per_enter": 7.98}  # fmt: skip
    data["rows"]["completions/coroutines"] = entry
    return data


def test_section_counts_io_uring_enter_apart_and_says_what_completion_changes():
    text = "\n".join(section(_with_completions(_stored(counter="strace"))))
    # The ring's own columns in a table of their own (no table wider than 8 columns).
    assert "| row | io_uring_enter | SQEs / CQEs per enter | other |" in text
    assert "| completions · coroutines | 0.250 | 8.00 / 7.98 | 0.010 |" in text
    ring_table = text.split("| row | io_uring_enter")[1].split("\n\n")[0]
    assert "traps" not in ring_table
    note = next(line for line in text.splitlines() if line.startswith("- **completions"))
    assert (
        "0.250 io_uring_enter per request (one crossing into the kernel per 4.0 requests)" in note
    )
    assert "8.00 SQEs submitted and 7.98 CQEs reaped per enter" in note
    prose = next(line for line in text.splitlines() if line.startswith("**Completion against"))
    # Beside the readiness rows, from their figures: uvloop-protocol makes the fewest (2.00).
    assert "(3 rows; fewest uvloop-protocol, most traps · coroutines)" in prose
    assert "make 2.00 to 3.00 syscalls per request" in prose
    assert "completions · coroutines makes 0.26: 0.250 io_uring_enter" in prose
    assert "7.7× fewer syscalls per request than the fewest" in prose
    assert "sum of the enters' return values" in prose
    assert "reaped ≈ submitted" in prose
    assert "(40% of its enters asked for a completion, the others only submitted" in prose


def test_a_completion_row_alone_in_its_table_is_explained_without_comparisons():
    """No readiness row beside it (a run narrowed with --loop completions): the paragraph
    says what the ring row does, and compares with nothing (it once raised UnboundLocalError
    on the readiness rows' fewest, bound only when there were some)."""
    data = _with_completions(_stored(counter="strace"))
    data["rows"] = {"completions/coroutines": data["rows"]["completions/coroutines"]}
    (prose,) = completion_against_readiness(data["rows"])
    assert "completions · coroutines makes 0.26: 0.250 io_uring_enter" in prose
    assert "(40% of its enters asked for a completion, the others only submitted" in prose
    assert "readiness rows" not in prose and "fewer syscalls" not in prose
    assert "reaped ≈ submitted" in prose
    assert "Completion against readiness" in "\n".join(section(data))


def test_section_renders_a_record_stored_before_io_uring_enter_was_counted_apart():
    data = _stored()
    for entry in data["rows"].values():
        del entry["syscalls"]["io_uring_enter"]
    text = "\n".join(section(data))
    assert "| traps · coroutines | 3.00 | 0.000 | 2.00 | 1.00 | 1.00 | 0.000 |" in text
    assert "| row | io_uring_enter" not in text
    assert "Completion against readiness" not in text and "io_uring_enter per request" not in text


def test_section_marks_a_row_whose_server_did_not_keep_the_rate():
    data = _stored()
    data["rows"]["traps/coroutines"]["kept_rate"] = False
    text = "\n".join(section(data))
    assert "| traps · coroutines † |" in text
    assert "† the server did not keep the offered rate" in text


def _closed(data):
    """A stored anatomy as `bench anatomy --closed-loop` writes it: its point has no rate."""
    data["point"] = {"size": 1024, "connections": 100, "measure": anatomy.CLOSED_LOOP,
                     "window_s": 3.0}  # fmt: skip
    data["date"] = "2026-11-26T23:00:00+00:00"
    for entry in data["rows"].values():
        entry["kept_rate"] = None  # the closed loop has no rate to keep
    return data


def test_the_closed_loop_renders_its_own_tables_after_the_fixed_loads():
    fixed = _stored()
    closed = _closed(_with_completions(_stored(counter="strace")))
    closed["rows"]["traps/coroutines"]["syscalls"]["recv_eagain"] = 0.5
    alone = section(fixed)
    both = section(fixed, closed)
    assert both[: len(alone)] == alone  # the fixed load's part as it renders alone
    assert section(fixed, None) == alone  # no closed-loop store: the section as it was
    part = "\n".join(both[len(alone) :])
    assert part.startswith("### Syscalls per echo request in the closed loop\n")
    assert "`python -m bench anatomy --closed-loop`" in part and "2026-11-26T23:00:00" in part
    assert "maximum throughput" in part and "batches as large as the connections allow" in part
    # The same columns as the fixed load's table, from the closed loop's figures.
    assert "| row | syscalls/req | waits | recv | EAGAIN recv | send | epoll_ctl |" in part
    assert "| traps · coroutines | 3.00 | 0.000 | 2.00 | 0.50 | 1.00 | 0.000 |" in part
    assert "| completions · coroutines | 0.250 | 8.00 / 7.98 | 0.010 |" in part
    assert "0.50 receives per request failed with EAGAIN" in part
    assert "Completion against readiness (completions · coroutines)" in part
    assert "strace -f" in part  # its own counter
    # Nothing in it speaks of the fixed load's rate as its own: "offered" only where it says
    # that the closed loop has none and which regime the fixed load is.
    offered = [line for line in part.splitlines() if "offered" in line]
    assert len(offered) == 1 and "(no offered rate)" in offered[0]
    assert "the fixed offered load is the report's headline one" in offered[0]
    assert "†" not in part and "fixed-load table" not in part
    assert "(the echo section's closed-loop table)" in part  # CPU, where it has too few reps


def test_batches_of_hundreds_of_requests_per_enter_are_written_without_a_decimal():
    closed = _closed(_with_completions(_stored(counter="perf")))
    closed["rows"]["completions/coroutines"]["syscalls"]["io_uring_enter"] = 0.0008
    text = "\n".join(section(None, closed))
    assert "0.001 io_uring_enter per request (one crossing into the kernel per 1,250 requests)" in (
        text
    )


def test_the_closed_loop_renders_without_a_fixed_load_anatomy_and_with_a_cpu_column():
    closed = _closed(_stored())
    for entry, base in zip(closed["rows"].values(), (8.0, 13.0, 10.0), strict=True):
        entry["cpu_us_reps"] = [base - 0.5, base, base + 0.5]
    text = "\n".join(section(None, closed))
    assert "Not measured in this tree yet: `python -m bench anatomy`" in text
    closed_part = text.split("### Syscalls per echo request in the closed loop")[1]
    assert "| traps · coroutines | 13.00 [12.50–13.50] | 3.00 |" in closed_part
    assert "No syscall counter ran" in "\n".join(
        section(None, {**_closed(_stored()), "counter": None, "unavailable": "no perf"})
    )


def test_the_report_renders_the_closed_loop_store_beside_the_fixed_loads(tmp_path):
    from types import SimpleNamespace

    from bench.pages import report

    (entry,) = [e for e in report.SECTIONS if e.titles == ("Cost anatomy",)]
    # A page of no particular machine: it holds the anatomy whatever machine measured it.
    page = SimpleNamespace(anatomy_data=_stored(), results=tmp_path, stores={}, own=lambda d: d)
    without = entry.lines(page)
    assert "### Syscalls per echo request in the closed loop" not in without
    anatomy.save_anatomy(tmp_path, _closed(_stored()), closed=True)
    with_closed = entry.lines(page)
    assert "### Syscalls per echo request in the closed loop" in with_closed
    assert with_closed[: len(section(_stored()))] == section(_stored())


def test_the_two_points_are_stored_apart_and_never_overwrite_each_other(tmp_path):
    fixed, closed = _stored(), _closed(_stored())
    anatomy.save_anatomy(tmp_path, fixed)
    anatomy.save_anatomy(tmp_path, closed, closed=True)
    assert load_anatomy(tmp_path) == fixed
    assert load_anatomy(tmp_path, closed=True) == closed
    assert {p.name for p in tmp_path.iterdir()} == set(FILES.values())
    assert anatomy.anatomy_path(tmp_path) != anatomy.anatomy_path(tmp_path, closed=True)
    assert load_anatomy(tmp_path / "elsewhere", closed=True) is None


def test_a_run_without_a_counter_stores_the_closed_loop_in_its_own_file(tmp_path, monkeypatch):
    """With no counter usable, `run` measures nothing and stores why, in the file of the point
    it was asked for: the fixed load's file stays as it was."""
    monkeypatch.setattr(anatomy, "available_counter", lambda prefer=None: (None, "none here"))
    anatomy.save_anatomy(tmp_path, _stored())
    assert anatomy.run(["traps"], tmp_path, closed=True) == 1
    assert load_anatomy(tmp_path) == _stored()
    stored = load_anatomy(tmp_path, closed=True)
    assert stored["unavailable"] == "none here" and stored["rows"] == {}
    assert stored["point"] == {**anatomy.closed_params(), "window_s": anatomy.PLAIN_S}
    assert "rate" not in stored["point"] and stored["point"]["measure"] == anatomy.CLOSED_LOOP
    assert anatomy.run(["traps"], tmp_path) == 1  # and the fixed load's run, its own file
    assert load_anatomy(tmp_path)["point"]["rate"] == anatomy.load_params()["rate"]
    assert load_anatomy(tmp_path, closed=True) == stored


def test_the_closed_loop_point_runs_the_load_generator_without_a_rate(tmp_path):
    from bench.studies.echo.measure import load_argv

    closed = load_argv(1234, anatomy.point_params(closed=True), 1.0, tmp_path / "o.json", 1)
    fixed = load_argv(1234, anatomy.point_params(closed=False), 1.0, tmp_path / "o.json", 1)
    assert "--rate" not in closed and "--rate" in fixed
    for argv in (closed, fixed):  # the same point otherwise: 1 KiB x 100 connections
        assert argv[argv.index("--size") + 1] == str(anatomy.SIZE) == "1024"
        assert argv[argv.index("--connections") + 1] == str(anatomy.CONNECTIONS) == "100"


@pytest.fixture
def sigterm_kept():
    """bench's main installs a SIGTERM handler: the test process gets its own back."""
    import signal

    kept = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, kept)


@pytest.mark.usefixtures("sigterm_kept")
@pytest.mark.parametrize("closed", [False, True])
@pytest.mark.parametrize("command", [["run", "--study", "anatomy"], ["anatomy"]])
def test_the_command_line_hands_closed_loop_and_its_options_to_run(closed, command, monkeypatch):
    from bench.__main__ import main

    calls = []
    monkeypatch.setattr(anatomy, "run", lambda *args, **kwargs: calls.append((args, kwargs)) or 0)
    argv = [*command, "--loop", "completions", "--loop", "traps", "--counter", "perf"]
    argv += ["--results", "/tmp/somewhere"] + (["--closed-loop"] if closed else [])
    assert main(argv) == 0
    assert calls == [
        ((["completions", "traps"], Path("/tmp/somewhere"), "perf"), {"closed": closed})
    ]


def test_section_says_how_to_measure_and_how_to_get_a_counter():
    assert "python -m bench anatomy" in "\n".join(section(None))
    missing = {**_stored(counter=None), "unavailable": "strace is not installed: install"}
    assert "No syscall counter ran: strace is not installed" in "\n".join(section(missing))


@pytest.fixture
def echo_server(request):
    """A real echo server (the callbacks loop, or the loop the test's ``loop`` parameter
    names) in its own process; its pid and port."""
    loop = getattr(request, "param", "callbacks")
    proc = subprocess.Popen(
        [sys.executable, "-m", "workloads.echo", "--loop", loop, "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(re.search(r":(\d+)", proc.stdout.readline())[1])
        yield proc.pid, port
    finally:
        proc.terminate()
        proc.wait(30)


def _requests(port: int, count: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count):
            conn.sendall(b"x" * 100)
            got = b""
            while len(got) < 100:
                got += conn.recv(100 - len(got))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tool", ["strace", "perf"])
def test_a_real_count_sees_a_receive_and_a_send_per_request(tool, echo_server, tmp_path):
    usable, why = anatomy.available_counter(tool)
    if usable is None:
        pytest.skip(why)
    pid, port = echo_server
    _requests(port, 5)  # connected and warm before counting
    with anatomy.Counting(tool, pid, tmp_path) as counting:
        _requests(port, 200)
    per = counting.counts.per_request(200)
    # One request is one readiness wait at most, one receive (plus, on loops that read
    # optimistically, maybe one that fails) and one send; a new connection's accept and close.
    assert 0.95 <= per["send"] <= 1.1
    assert 0.95 <= per["recv"] - per["recv_eagain"] <= 1.1
    assert per["wait"] <= 1.1
    assert per["total"] >= 2


def _completions_unusable() -> str | None:
    from loops.completions import uring

    try:
        uring.probe()
    except OSError as error:
        return f"io_uring unusable here: {uring.why(error)}"
    return None


@pytest.mark.timeout(120)
@pytest.mark.skipif(bool(_completions_unusable()), reason=str(_completions_unusable()))
@pytest.mark.parametrize("echo_server", ["completions"], indirect=True)
def test_a_real_count_on_the_completion_loop_sees_its_enters_and_their_entries(
    echo_server, tmp_path
):
    usable, why = anatomy.available_counter("strace")  # it reads the enters' return values
    if usable is None:
        pytest.skip(why)
    pid, port = echo_server
    _requests(port, 5)
    with anatomy.Counting("strace", pid, tmp_path) as counting:
        _requests(port, 200)
    counts = counting.counts
    per = counts.per_request(200)
    # Its send is tried first, one send(2) (loops/completions/api.py: sendall), which the
    # socket takes whole. Its receive is tried too (api.py: recv), a recv(2) at the task's
    # next turn that takes the request if it waits by then, and is skipped after tries that
    # found nothing; what the tries did not take is an SQE. Before it, a try at once, which a
    # client in lockstep makes fail every time: after the first few, one receive in
    # SKIPS_MAX + 1 makes it (Loop.recv_now_skips).
    from loops.completions.api import SKIPS_MAX

    assert per["wait"] == per["epoll_ctl"] == 0 and per["send"] == 1
    assert per["recv"] <= 1 + (8 + 200 / (SKIPS_MAX + 1)) / 200
    found = round((per["recv"] - per["recv_eagain"]) * 200)  # requests taken by a try
    assert per["io_uring_enter"] > 0 and per["other"] < 0.1
    uring = counts.per_enter()
    assert uring["enters"] == counts.calls["io_uring_enter"]
    assert uring["submitted_per_enter"] > 0
    # An idle turn asks for a completion; on a loaded machine every request can be there
    # before the loop looks (the tries take them all), and then no enter waits.
    assert 0 <= uring["waiting"] <= uring["enters"]
    assert uring["waiting"] > 0 or found > 0
    # One client in lockstep: a recv SQE per request the tries did not take, completing once.
    assert 200 <= uring["submitted"] + found <= 200 + 5
    assert uring["sq_consumed"] == uring["submitted"]  # the ring agrees with the returns
    assert abs(uring["cq_reaped"] - uring["submitted"]) <= 2  # a recv in flight at each end
    assert uring["reaped_per_enter"] > 0


@pytest.mark.timeout(180)
def test_bench_anatomy_stores_a_row_and_the_report_renders_it(tmp_path: Path):
    usable, why = anatomy.available_counter()
    if usable is None:
        pytest.skip(why)
    assert anatomy.run(["handlers"], tmp_path) == 0
    data = load_anatomy(tmp_path)
    entry = data["rows"]["handlers/callbacks"]
    assert "error" not in entry, entry
    assert entry["code"] == _code("handlers/callbacks")
    # The CPU is the scheduler's exact figure; its user/system split is the kernel's tick
    # sample, which can put a short window's whole CPU in either mode (not asserted).
    assert entry["syscalls"]["send"] > 0.9 and entry["user_us"] + entry["system_us"] > 0
    text = "\n".join(section(data))
    assert re.search(r"\| handlers · callbacks( †)? \|", text)  # † on a machine too busy
    assert set(entry["switches"]) == {"voluntary", "involuntary"}
    # What the line says first depends on the figures (failed reads, churn, waits, or the total).
    assert re.search(r"- \*\*handlers · callbacks\*\*: \d+\.\d\d [a-zA-Z_ ]+ per request", text)


@pytest.mark.timeout(180)
def test_a_thread_per_connection_is_counted_while_its_threads_live(tmp_path: Path):
    # Its connection threads end when the load closes its connections, taking their CPU and
    # context switches with them: read after the window, the server looked almost idle.
    usable, why = anatomy.available_counter()
    if usable is None:
        pytest.skip(why)
    assert anatomy.run(["threads"], tmp_path) == 0
    entry = load_anatomy(tmp_path)["rows"]["threads/blocking"]
    assert "error" not in entry, entry
    # Every request wakes the connection's thread from its blocking recv: a switch or more.
    assert entry["switches"]["voluntary"] >= 0.9
    # Served by 100 threads in Python: not a fraction of a microsecond per request.
    assert min(entry["cpu_us_reps"]) > 2


@pytest.mark.timeout(180)
def test_bench_anatomy_in_the_closed_loop_stores_a_row_apart_and_the_report_renders_it(
    tmp_path: Path,
):
    usable, why = anatomy.available_counter()
    if usable is None:
        pytest.skip(why)
    assert anatomy.run(["handlers"], tmp_path, closed=True) == 0
    assert load_anatomy(tmp_path) is None  # the fixed load's file: not written
    data = load_anatomy(tmp_path, closed=True)
    assert data["point"]["measure"] == anatomy.CLOSED_LOOP and "rate" not in data["point"]
    entry = data["rows"]["handlers/callbacks"]
    assert "error" not in entry, entry
    assert entry["code"] == _code("handlers/callbacks")
    # Closed loop: no rate to keep, and as many requests as the server serves.
    assert entry["kept_rate"] is None and entry["requests_per_s"] > 0
    assert entry["syscalls"]["send"] > 0.9 and len(entry["cpu_us_reps"]) == anatomy.CPU_REPETITIONS
    text = "\n".join(section(None, data))
    closed_part = text.split("### Syscalls per echo request in the closed loop")[1]
    assert re.search(r"\| handlers · callbacks \|", closed_part)


def test_cpu_is_the_schedulers_exact_total_split_by_the_tick_ratio():
    user, system = anatomy.user_system((100, 50), (160, 80), 0.9)
    assert (user, system) == pytest.approx((0.6, 0.3))  # 0.9 s on CPU: 60 ticks user, 30 system
    assert anatomy.user_system((7, 7), (7, 7), 0.0) == (0.0, 0.0)
    user_ticks, system_ticks = anatomy.ticks(os.getpid())
    assert user_ticks >= 0 and system_ticks >= 0


def test_a_run_of_a_few_rows_keeps_the_others_repetitions_and_says_which_were_apart(
    tmp_path, monkeypatch
):
    """`bench anatomy --loop NAME` measures that row again: every other row keeps its CPU
    repetitions and its date, the section keeps the date most rows were measured on, and the
    page names the rows measured apart (their figures compare with each other, not the rest)."""
    from machine import environment

    env = environment.capture()
    data = _closed(_stored())
    data["machine"] = json.loads(json.dumps(environment.machine_key(env)))
    data["point"] = {**anatomy.point_params(True, tmp_path), "window_s": anatomy.PLAIN_S}
    for entry in data["rows"].values():
        entry["cpu_us_reps"] = [9.0, 10.0, 11.0]
    anatomy.save_anatomy(tmp_path, data, closed=True)
    fresh = _entry("traps · coroutines", "home-made", 2.0, 4.0)
    monkeypatch.setattr(anatomy, "available_counter", lambda prefer=None: ("perf", ""))
    monkeypatch.setattr(anatomy.Cores, "plan", staticmethod(lambda: None))
    monkeypatch.setattr(anatomy, "measure_row", lambda *args: dict(fresh))
    monkeypatch.setattr(anatomy, "cpu_only", lambda *args: 7.0)
    assert anatomy.run(["traps"], tmp_path, closed=True) == 0
    stored = load_anatomy(tmp_path, closed=True)
    rows = stored["rows"]
    assert rows["traps/coroutines"]["cpu_us_reps"] == [6.0] + [7.0] * (anatomy.CPU_REPETITIONS - 1)
    for key in ("uvloop-protocol/native", "roundrobin/coroutines"):
        assert rows[key]["cpu_us_reps"] == [9.0, 10.0, 11.0]
        assert rows[key]["date"] == data["date"]
    assert stored["date"] == data["date"]  # the session most rows are of
    assert rows["traps/coroutines"]["date"] != data["date"]
    page = "\n".join(section(_stored(), stored))
    assert "Measured again apart from the other rows" in page
    assert f"traps · coroutines on {rows['traps/coroutines']['date'][:16]}" in page
