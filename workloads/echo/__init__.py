"""The echo workload: a TCP (or UDP) echo server per style, and its load generator.

Server (runs on the loop under test)::

    python -m workloads.echo --loop NAME [--style S] [--host H] --port P [--udp] [-v]

It prints ``listening on HOST:PORT (..., pid PID)`` once it is ready (``--port 0`` picks a
free port; read the line to learn which), serves until SIGINT or SIGTERM, then closes every
socket and exits 0 (1 if a socket was still open at exit, listing them). ``callbacks.py``,
``generators.py``, ``coroutines.py`` and ``blocking.py`` are the same server in each style,
written to be diffed; ``common.py`` holds what they share.

Load generator (its own process or processes: C on epoll where the machine has a C compiler,
``loadgen.c`` built on first use by :mod:`workloads.echo.loadgen`, else Python on uvloop; see
:mod:`workloads.echo.load` for its options and JSON fields)::

    python -m workloads.echo.load --port P --connections N --size BYTES --duration S \\
        [--rate R] [--generator auto|native|python] [--udp] [--processes K] [--json FILE]
        [--server-pid PID]

How much the generator itself costs per request, against a minimal C ping-pong client::

    python -m workloads.echo.loadgen --serve
"""
