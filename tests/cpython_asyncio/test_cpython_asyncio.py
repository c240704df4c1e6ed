"""CPython's own asyncio tests, run on the callbacks loop as a drop-in (``loops.callbacks.dropin``).

Tests nobody in the lab wrote: the standard library's ``test.test_asyncio`` mixins and test
cases, subclassed with a loop factory exactly as uvloop's own test suite does, so the tests of
the interpreter that runs this file are the ones run. What fails is data: ``deviations.toml``
beside this file, one entry per test with its reason, turned into strict expected failures (or
skips, for a test that would hang or that reads asyncio's private internals), so the run is
green and a test that starts passing says so. The count is in ``loops/callbacks/README.md``;
reproduce it with ``python -m pytest tests/cpython_asyncio -q -p no:randomly``.
"""

from __future__ import annotations

import asyncio
import unittest

import pytest

from loops.callbacks.dropin import new_event_loop

try:
    from test.test_asyncio import (
        test_events,
        test_sendfile,
        test_server,
        test_sock_lowlevel,
        test_sslproto,
        test_streams,
    )
    from test.test_asyncio import utils as test_utils
except ImportError as error:  # a Python without its test package (Debian's python3 minimal)
    pytest.skip(f"CPython's test package is not installed: {error}", allow_module_level=True)


# The event loop API (callbacks, readers/writers, executors, signals, connections, servers,
# datagrams, pipes, close) and subprocesses.
class CallbacksEventLoopTests(
    test_events.EventLoopTestsMixin, test_events.SubprocessTestsMixin, test_utils.TestCase
):
    def create_event_loop(self):
        return new_event_loop()


# The sock_* coroutines.
class CallbacksSockTests(test_sock_lowlevel.BaseSockTestsMixin, test_utils.TestCase):
    def create_event_loop(self):
        return new_event_loop()


# loop.sendfile (os.sendfile on a plain connection, the fallback over TLS, a peer closing
# mid-file) and loop.sock_sendfile.
class CallbacksSendfileTests(test_sendfile.SendfileTestsBase, test_utils.TestCase):
    def create_event_loop(self):
        return new_event_loop()


# asyncio's streams and start_server over the loop's transports (new_event_loop() is the
# loop's, through the event loop policy set for this module).
class CallbacksStreamTests(test_streams.StreamTests):
    pass  # its setUp calls asyncio.new_event_loop(): the policy below makes that ours


class CallbacksStartServerTests(test_server.BaseStartServer, unittest.TestCase):
    def new_loop(self):
        return new_event_loop()


# TLS over the loop's transports: start_tls on an open connection, handshake and shutdown
# timeouts, a client that goes away mid-handshake.
class CallbacksStartTLSTests(test_sslproto.BaseStartTLS, unittest.TestCase):
    def new_loop(self):
        return new_event_loop()


class _Policy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self):
        return new_event_loop()


@pytest.fixture(autouse=True, scope="module")
def _callbacks_policy():
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(_Policy())
    yield
    asyncio.set_event_loop_policy(previous)
