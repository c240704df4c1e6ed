"""The http workload: a real server (uvicorn) on each loop that speaks asyncio, loaded by wrk.

    python -m workloads.http --loop NAME [--path /plaintext|/json]
        [--seconds S] [--connections N] [--threads T] [--warmup S] [--http IMPL] [--json FILE]

Nothing on the request path was written in the lab but the loop: the ASGI app
(:mod:`workloads.http.app`, plaintext and JSON, keep-alive) is served by uvicorn with its
httptools parser, on the variant's ``asyncio_loop`` factory (``loops/contract.py``; ``--loop``
lists the variants that have one when it names one that does not), and loaded by wrk (Debian's
``wrk``) in its own process. Unlike echo, sleep and crawler, it is written once, not per
style: the style here is asyncio's own API, and the loop under test must provide it.
asyncio's eager tasks are measured as the ``asyncio_eager`` variant (Python 3.12+).

The run: the server starts in its own process, pinned to one core (wrk to the other, where the
machine has two); each path is fetched once and its body compared; ``--warmup`` seconds of load
are thrown away; the server's CPU (psutil) is read around the measured wrk run; the server is
stopped with SIGTERM. wrk reports through ``report.lua`` (JSON, microseconds).

Every response is checked: wrk counts connect, read, write and timeout errors, and a status
>= 400 as a ``status`` error; any of them, a wrong body, no request at all or a server that
died makes the run invalid (``valid`` false, ``invalid_reason`` says why, exit status 1).

JSON record (``--json FILE``, ``-`` for stdout; one flat object):

- ``workload`` "http", ``loop``, ``http`` (uvicorn's parser), ``path``,
  ``connections``, ``threads``, ``duration_s`` (asked, whole seconds), ``python``, ``uvicorn``
  (version), ``pinned`` (server and wrk on two different cores), ``server_pid``
- ``wall_s`` (wrk's measured duration), ``requests``, ``requests_per_s``
- ``latency_us_p50``, ``latency_us_p90``, ``latency_us_p99``, ``latency_us_p999``,
  ``latency_us_mean``, ``latency_us_max``: wrk's latency in microseconds (closed loop)
- ``errors_connect``, ``errors_read``, ``errors_write``, ``errors_status``,
  ``errors_timeout``, ``failures`` (their sum), ``body_error`` ("" if the bodies were right)
- ``server_cpu_s`` (over the measured window), ``server_cpu_share`` (per wall second),
  ``server_cpu_us_per_request``, ``wrk_cpu_share`` (near 1.0: wrk, not the server, set the pace)
- ``server_alive``, ``valid``, ``invalid_reason``, ``ok`` (= valid)

Exit status: 0 for a valid run, 1 for an invalid one, 2 for bad arguments (an unknown loop, a
loop without asyncio, wrk missing), 130 on Ctrl-C.
"""
