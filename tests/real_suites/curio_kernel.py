"""A pytest plugin: curio's own kernel tests that need nothing but ``Kernel.run``, on a home-made
coroutine loop.

curio's tests take a ``kernel`` fixture that its ``conftest.py`` builds from ``curio.Kernel``;
loaded with ``-p curio_kernel`` before that conftest is imported, this plugin puts in its place
a kernel whose ``run`` hands the coroutine to ``LAB_LOOP``'s ``run`` (and a monitor that watches
nothing), so a test that asks only what a kernel's ``run`` does (refuse to start inside a
running one, say) runs unmodified on the lab's loop. Tests that await curio's own traps
(``curio.sleep``, ``spawn``) speak curio's kernel, not the lab's, and are not selected.
"""

from __future__ import annotations

import os

import curio
import curio.monitor

import loops

VARIANT = loops.get(os.environ["LAB_LOOP"])


class LabKernel:
    """curio's ``Kernel`` as far as ``run`` goes: one call runs one coroutine to its end."""

    def __init__(self, **_options) -> None:
        pass

    def run(self, corofunc=None, *args, shutdown=False):
        if corofunc is None:  # curio's way to ask a kernel to shut down: nothing to run here
            return None
        coro = corofunc(*args) if callable(corofunc) else corofunc
        return VARIANT.coroutines.run(coro)

    def __enter__(self) -> LabKernel:
        return self

    def __exit__(self, *exc) -> None:
        pass


class NoMonitor:
    """curio's monitor opens a port to inspect curio's kernel; the lab's loop has none to show."""

    def __init__(self, kernel, *args, **kwargs) -> None:
        pass

    def close(self) -> None:
        pass


curio.Kernel = LabKernel
curio.monitor.Monitor = NoMonitor
