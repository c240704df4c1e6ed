"""TLS for the workloads: a certificate made at start, client contexts, and the per-style layer.

``server_context()`` makes a throwaway CA and a certificate for this machine's loopback names
with trustme (in memory, never written to the tree) and returns a server ``SSLContext``;
``client_context(verify)`` is the peers' side. The home-made loops get TLS from one sans-I/O
layer per style (``callbacks.py``, ``generators.py``, ``coroutines.py``, ``blocking.py``, to be
diffed, over the loop-free ``common.py``); :class:`Layer` hands a style file its layer bound to
the server's context. Why a loop does TLS through memory BIOs: ``README.md`` beside this file.
"""

from __future__ import annotations

import importlib
import socket
import ssl

from workloads.tls.common import Session

# The names the certificate is good for: where the lab's servers listen.
NAMES = ("127.0.0.1", "::1", "localhost")


def server_context() -> ssl.SSLContext:
    """A server context with a certificate made now, signed by a CA made now (trustme)."""
    import trustme  # a dependency of the workloads group; imported only when TLS is asked for

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # No renegotiation: a write then never has to wait for a read (see README.md).
    context.options |= ssl.OP_NO_RENEGOTIATION
    trustme.CA().issue_cert(*NAMES).configure_cert(context)
    return context


def client_context(verify: bool = False) -> ssl.SSLContext:
    """A client context. verify=False: no check of the server's certificate, as the lab's load
    generator does (nothing outside the server knows a certificate made at its start);
    verify=True: the default CA store, which refuses that certificate (the "bad certificate"
    case)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class Layer:
    """One style's TLS layer bound to the server's context: what a style file is handed.

    ``session(sock)`` wraps an accepted socket (loop-free); ``handshake``, ``recv``, ``sendall``
    and ``unwrap`` are the style's own functions (``workloads/tls/<style>.py``).
    """

    def __init__(self, style: str, context: ssl.SSLContext) -> None:
        module = importlib.import_module(f"{__name__}.{style}")
        self.context = context
        self.handshake = module.handshake
        self.recv = module.recv
        self.sendall = module.sendall
        self.unwrap = module.unwrap

    def session(self, sock: socket.socket) -> Session:
        return Session(sock, self.context)
