"""The cost anatomy: its parsers, its counters on a real server, and the section it renders."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench import store
from bench.environment import ROOT
from bench.measure import anatomy
from bench.render.anatomy import section

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


def _entry(label, kind, user, system, eagain=0.0, epoll_ctl=0.0):
    syscalls = dict.fromkeys(anatomy.COLUMNS, 0.0)
    syscalls.update(recv=1 + eagain, send=1.0, recv_eagain=eagain, epoll_ctl=epoll_ctl)
    syscalls["total"] = 2 + eagain + epoll_ctl
    return {"label": label, "kind": kind, "user_us": user, "system_us": system,
            "syscalls": syscalls}  # fmt: skip


def _stored(counter="perf"):
    return {
        "counter": counter,
        "unavailable": "",
        "date": "2026-11-23T02:00:00+00:00",
        "point": {"size": 1024, "connections": 100, "window_s": 1.0},
        "rows": {
            "uvloop-protocol/native": _entry("uvloop-protocol", "anchor", 1.5, 6.5),
            "traps/coroutines": _entry("traps · coroutines", "home-made", 5.0, 8.0, eagain=1.0),
            "roundrobin/coroutines": _entry(
                "roundrobin · coroutines", "home-made", 3.0, 7.0, epoll_ctl=0.4
            ),
        },
    }


def test_section_writes_the_table_and_what_each_loops_figures_say():
    text = "\n".join(section(_stored()))
    assert "## Cost anatomy" in text and "perf stat" in text
    assert re.search(r"\| traps · coroutines \| 13\.00 \| 5\.00 \| 8\.00 \| 38% \| 1\.62 \|", text)
    traps = next(line for line in text.splitlines() if line.startswith("- **traps"))
    assert "1.00 receives per request failed with EAGAIN" in traps
    assert "+3.50 µs of Python" in traps
    roundrobin = next(line for line in text.splitlines() if line.startswith("- **roundrobin"))
    assert "0.40 epoll_ctl per request" in roundrobin
    assert "- **uvloop" not in text  # anchors are the yardstick, not explained
    assert "†" not in text


def test_section_marks_a_row_whose_server_did_not_keep_the_rate():
    data = _stored()
    data["rows"]["traps/coroutines"]["kept_rate"] = False
    text = "\n".join(section(data))
    assert "| traps · coroutines † |" in text
    assert "† the server did not keep the offered rate" in text


def test_section_says_how_to_measure_and_how_to_get_a_counter():
    assert "python -m bench anatomy" in "\n".join(section(None))
    missing = {**_stored(counter=None), "unavailable": "strace is not installed: install"}
    assert "No syscall counter ran: strace is not installed" in "\n".join(section(missing))


@pytest.fixture
def echo_server():
    """A real echo server (the callbacks loop) in its own process; its pid and port."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "workloads.echo", "--loop", "callbacks", "--port", "0"],
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


@pytest.mark.timeout(180)
def test_bench_anatomy_stores_a_row_and_the_report_renders_it(tmp_path: Path):
    usable, why = anatomy.available_counter()
    if usable is None:
        pytest.skip(why)
    assert anatomy.run(["handlers"], tmp_path) == 0
    data = store.load_anatomy(tmp_path)
    entry = data["rows"]["handlers/callbacks"]
    assert "error" not in entry, entry
    assert entry["syscalls"]["send"] > 0.9 and entry["user_us"] > 0
    text = "\n".join(section(data))
    assert re.search(r"\| handlers · callbacks( †)? \|", text)  # † on a machine too busy
    # What the line says first depends on the figures (failed reads, churn, waits, or the total).
    assert re.search(r"- \*\*handlers · callbacks\*\*: \d+\.\d\d [a-zA-Z_ ]+ per request", text)


def test_cpu_is_the_schedulers_exact_total_split_by_the_tick_ratio():
    user, system = anatomy.user_system((1.0, 100, 50), (1.9, 160, 80))
    assert (user, system) == pytest.approx((0.6, 0.3))  # 0.9 s on CPU; 60 of 90 ticks user
    assert anatomy.user_system((1.0, 7, 7), (1.0, 7, 7)) == (0.0, 0.0)
    seconds, user_ticks, system_ticks = anatomy.cpu_times(os.getpid())
    assert seconds > 0 and user_ticks >= 0 and system_ticks >= 0
