"""The http workload: a real server (uvicorn) on each loop that speaks asyncio, loaded by wrk.

    python -m workloads.http --loop NAME [--path /plaintext|/json]
        [--seconds S] [--connections N] [--threads T] [--warmup S] [--http IMPL] [--json FILE]

Nothing on the request path was written in the lab but the loop: the ASGI app
(:mod:`workloads.http.app`) is served by uvicorn on the variant's ``asyncio_loop`` factory
(``loops/contract.py``) and loaded by wrk in its own process. It is written once, not per
style: the style here is asyncio's own API. The run, its validity and its JSON record:
``workloads/README.md``.
"""
