"""Memory per connection, measured: a real echo server, and the memory peer in its own process."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.plan import Point, Row
from bench.procs import ChildFailed, Cores
from bench.studies.connections import measure as connections

SMALL = 300  # enough connections for a per-connection figure above the allocator's noise


def _measure(row: Row, count: int, tmp_path: Path) -> dict:
    point = Point("connections", (("connections", count), ("size", 1024)), (row,), 1)
    return connections.measure(point, row, Cores.plan(), tmp_path, False)


@pytest.mark.timeout(120)
def test_a_thread_per_connection_holds_more_than_a_protocol_object(tmp_path):
    protocol = _measure(Row("asyncio-protocol", "native", anchor=True), SMALL, tmp_path)
    threads = _measure(Row("threads", "blocking"), SMALL, tmp_path)
    for figures in (protocol, threads):
        assert 0 < figures["idle_bytes_per_connection"] < 1_000_000
        assert figures["server_rss_mib"] > 1
    # A thread's touched stack and its thread state against a transport and a protocol:
    # several times the memory, idle already.
    assert threads["idle_bytes_per_connection"] > 3 * protocol["idle_bytes_per_connection"]


@pytest.mark.timeout(120)
def test_a_server_the_machine_stops_fails_its_row_saying_why(tmp_path):
    # handlers waits with select(): no descriptor above 1,023, and 1,100 connections need one.
    with pytest.raises(ChildFailed) as failed:
        _measure(Row("handlers", "callbacks"), 1_100, tmp_path)
    assert "the server ended" in str(failed.value)
    assert "beyond select()'s ceiling of 1024" in str(failed.value)  # the server's own words


def test_the_memory_peer_says_clearly_when_its_server_is_not_there(capsys):
    from workloads.echo import memory

    with pytest.raises(SystemExit) as exit_info:
        memory.main(["--port", "9", "--server-pid", str(2**22 + 1), "--connections", "1"])
    assert exit_info.value.code == 2
    assert "no such process" in capsys.readouterr().err
