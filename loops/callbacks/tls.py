"""TLS for the drop-in: asyncio's own ``SSLProtocol`` between a plain transport and the app.

How asyncio does TLS on any loop: the socket keeps its plain transport (``transports.py``),
whose protocol is an ``asyncio.sslproto.SSLProtocol``; that object runs TLS over two
``ssl.MemoryBIO`` buffers (encrypted bytes in from the transport, out through its ``write``)
and hands the application's protocol a second transport that speaks plaintext. The loop only
chooses which protocol a socket's transport gets, and waits for the handshake.

The one private class of asyncio the drop-in reuses, argued: TLS is a state machine
(handshake with its timeout, close_notify and its timeout, flow control between the record
layer and both sides) that teaches nothing about event loops, and asyncio keeps it as a
protocol object that asks a loop only for what this one has (its ``self._loop`` calls in
``asyncio/sslproto.py``, CPython 3.11 to 3.13: ``call_soon``, ``call_later``, ``time``,
``get_debug``, ``call_exception_handler``) and a transport only for the public
``asyncio.Transport`` API. The class came from uvloop: CPython 3.11 took uvloop's SSL
implementation (``uvloop/sslproto.pyx``) as its own (CPython issue 88177). Its signature has
been the same from Python 3.11 to 3.13.
"""

from __future__ import annotations

import ssl as ssl_module
from asyncio import sslproto
from typing import Any


def client_hostname(ssl: Any, server_hostname: Any, host: Any) -> Any:
    """The name a client checks the server's certificate against, by asyncio's rules."""
    if not ssl:
        return None
    if server_hostname is None:
        if not host:
            raise ValueError("You must set server_hostname when using ssl without a host")
        return host
    return server_hostname


def check(ssl: Any, server_hostname: Any, handshake_timeout: Any, shutdown_timeout: Any) -> None:
    """asyncio's argument rules: the TLS-only arguments need ssl."""
    if ssl:
        return
    if server_hostname is not None:
        raise ValueError("server_hostname is only meaningful with ssl")
    if handshake_timeout is not None:
        raise ValueError("ssl_handshake_timeout is only meaningful with ssl")
    if shutdown_timeout is not None:
        raise ValueError("ssl_shutdown_timeout is only meaningful with ssl")


def server_context(ssl: Any) -> ssl_module.SSLContext | None:
    """A server's context: an SSLContext or None (a server cannot make one up, as a client
    can from ``ssl=True``)."""
    if ssl is not None and not isinstance(ssl, ssl_module.SSLContext):
        raise TypeError("ssl argument must be an SSLContext or None")
    return ssl


def protocol(
    loop: Any,
    app_protocol: Any,
    ssl: Any,
    waiter: Any,
    *,
    server_side: bool = False,
    server_hostname: Any = None,
    handshake_timeout: Any = None,
    shutdown_timeout: Any = None,
    call_connection_made: bool = True,
) -> sslproto.SSLProtocol:
    """The TLS protocol to give a plain transport; its ``_app_transport`` is what the
    application gets. ``ssl=True`` means asyncio's default client context."""
    context = None if isinstance(ssl, bool) else ssl
    return sslproto.SSLProtocol(
        loop,
        app_protocol,
        context,
        waiter,
        server_side,
        server_hostname,
        call_connection_made=call_connection_made,
        ssl_handshake_timeout=handshake_timeout,
        ssl_shutdown_timeout=shutdown_timeout,
    )
