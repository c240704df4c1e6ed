"""Hooks for every test run in the lab, conformance and the lab's own tests alike."""

from __future__ import annotations

import gc
import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal delivers it, however the run was started.

    A shell starts a background job (`cmd &`) with SIGINT ignored, and CPython then never
    raises KeyboardInterrupt; an exec'd child inherits the ignored signal. Every property and
    test that sends SIGINT (to this process, to a forked child, or to a workload it starts)
    would then read a loop's clean stop as a fault. The terminal sends nothing to a background
    job, so taking Ctrl-C back changes nothing else.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Collect a failing case's garbage before pytest renders its traceback.

    Scenarios that provoke faults leave garbage with finalizers (never-awaited coroutines, a
    reference loop's unfinished tasks). Rendering a failure (an expected one included) parses
    the test's source with ``ast``; on CPython 3.11 a finalizer that the garbage collector runs
    inside ``ast.parse`` breaks it ("AST constructor recursion depth mismatch", CPython
    gh-106905), an INTERNALERROR that stops the whole session. Collecting first, only when
    there is a traceback to render, moves the finalizers to a quiet moment.
    """
    if call.excinfo is not None:
        gc.collect()
    return (yield)
