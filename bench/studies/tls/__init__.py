"""TLS's cost per request, declared: echo's headline point read with and without TLS. Its
points are echo's (``bench.studies.echo.TLS``, a parameter), measured by echo's running side."""

from __future__ import annotations

METRIC = "server_cpu_us"  # the figure read plain and over TLS
TITLE = "TLS's cost per request"
