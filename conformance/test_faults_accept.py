"""Accepting with no descriptor left: the server pauses instead of spinning, then recovers.

The echo server runs with RLIMIT_NOFILE lowered to FD_LIMIT (set in the child before it
starts), and more clients connect than it can hold: once its descriptors are exhausted,
``accept()`` fails with EMFILE while the listener stays readable, because the unaccepted
connections wait in the kernel's backlog. A server that simply retries spins at 100% CPU; the
lab's servers pause accepting for a moment (``workloads.echo.common.ACCEPT_RETRY_DELAY``), as
asyncio's and trio's own accept loops do. The case measures the server's CPU demand while it
is exhausted (a ratio of CPU and runnable time to wall time, never a wall-clock bound), then
frees descriptors by closing the clients it served, and checks that every waiting client is
then accepted and served, and that the server still stops cleanly.
"""

from __future__ import annotations

import select

from conformance.processes import (
    case_prop,
    connect,
    cpu_demand,
    recv_exactly,
    stopped_cleanly,
    until,
)
from conformance.test_faults_echo import echo_server

FD_LIMIT = 64
EXTRA = 40  # clients beyond what the server can hold, left waiting in its backlog
SPINNING = 0.75  # CPU demand (share of wall time) above which the server is spinning (~1.0)
MEASURE = 1.0  # seconds of the exhausted server's life to measure


def _ping(n: int) -> bytes:
    return b"ping %05d\n" % n


def _serve_in_turn(waiting: list, pings: list[bytes]) -> int:
    """Wait for each client's echo, closing it then (which frees a descriptor for the next one
    in the backlog); how many were not served. Stops waiting at the first that is not."""
    for n, (client, ping) in enumerate(zip(waiting, pings, strict=True)):
        with client:
            if recv_exactly(client, len(ping)) != ping:
                for rest in waiting[n + 1 :]:
                    rest.close()
                return len(waiting) - n
    return 0


def exhausted_server_pauses_and_recovers(start) -> dict:
    with start(max_fds=FD_LIMIT) as server:
        clients = []
        for n in range(FD_LIMIT + EXTRA):
            client = connect(server.port)
            client.sendall(_ping(n))
            clients.append(client)
        seen = {"exhausted": until(lambda: server.fds() >= FD_LIMIT - 1)}
        demand = cpu_demand(server.pid, MEASURE)
        seen["does not spin"] = demand["demand"] < SPINNING or demand
        seen["alive while exhausted"] = server.alive
        # The clients it accepted have their echo by now; close them to free descriptors.
        served = set(select.select(clients, [], [], 0)[0])
        for client in served:
            client.close()
        waiting = [c for c in clients if c not in served]
        seen["some waited"] = len(waiting) >= EXTRA
        unserved = _serve_in_turn(waiting, [_ping(clients.index(c)) for c in waiting])
        seen["every waiting client served after"] = unserved == 0 or f"{unserved} not served"
        seen["stopped cleanly"] = stopped_cleanly(server)
        if seen != RECOVERED:
            seen["server log"] = server.errors()[-2000:]
        return seen


RECOVERED = {
    "exhausted": True,
    "does not spin": True,
    "alive while exhausted": True,
    "some waited": True,
    "every waiting client served after": True,
    "stopped cleanly": True,
}


@case_prop("io", timeout=60)
def test_out_of_descriptors_the_server_pauses_accepting_and_recovers(case, tmp_path):
    assert exhausted_server_pauses_and_recovers(echo_server(case, tmp_path)) == RECOVERED
