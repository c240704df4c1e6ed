"""The ASGI application the http workload serves: plaintext and JSON, as TechEmpower's tests.

    GET /plaintext  -> 200 text/plain        "Hello, World!"
    GET /json       -> 200 application/json  {"message": "Hello, World!"}
    anything else   -> 404

Plain ASGI (no framework), so a request costs the server, its HTTP parser and the loop, and
nothing else. Keep-alive is the server's business (uvicorn keeps HTTP/1.1 connections open).
Run it on any loop: ``uvicorn --loop loops.callbacks.dropin:new_event_loop
workloads.http.app:app``.
"""

from __future__ import annotations

import json
from typing import Any

PLAINTEXT = b"Hello, World!"
JSON = json.dumps({"message": "Hello, World!"}).encode()
# The body each path must answer with: the workload checks them before it loads the server.
BODIES = {"/plaintext": PLAINTEXT, "/json": JSON}
_TYPES = {"/plaintext": b"text/plain", "/json": b"application/json"}


async def app(scope: dict, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    path = scope["path"]
    body = BODIES.get(path)
    status, content_type = (200, _TYPES[path]) if body is not None else (404, b"text/plain")
    body = body if body is not None else b"not found"
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
