"""The echo workload: a TCP (or UDP) echo server per style, and its load generator.

    python -m workloads.echo --loop NAME [--style S] [--host H] --port P [--udp | --tls] [-v]

``callbacks.py``, ``generators.py``, ``coroutines.py`` and ``blocking.py`` are the same server
in each style, written to be diffed; ``common.py`` holds what they share. The load generator
(:mod:`workloads.echo.load`), the anchors (:mod:`workloads.echo.native`) and the commands:
``workloads/README.md``.
"""
