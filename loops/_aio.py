"""Adapter shared by the loops that implement asyncio's API (asyncio itself and uvloop).

Both styles map one-to-one onto the asyncio API; the only additions are what the lab's
contract asks for and asyncio spells differently: ``run_in_thread`` with a completion callback,
task functions (``spawn``/``join``/``cancel``), ``timeout_after``, and the non-blocking-socket
check that asyncio performs only in debug mode. Nothing here sits on a hot path that a user of
asyncio would not also pay for.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from types import SimpleNamespace

from loops.contract import check_nonblocking


def callbacks_factory(
    base: type[asyncio.AbstractEventLoop],
) -> Callable[[], asyncio.AbstractEventLoop]:
    """A zero-argument factory of loops of `base` extended with run_in_thread."""

    class Loop(base):  # type: ignore[misc, valid-type]
        _lab_pool: concurrent.futures.ThreadPoolExecutor | None = None

        def run_in_thread(self, fn, *args, callback):
            if self.is_closed():
                raise RuntimeError("Event loop is closed")
            if self._lab_pool is None:
                self._lab_pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="lab")
            future = self._lab_pool.submit(fn, *args)
            future.add_done_callback(lambda f: self.call_soon_threadsafe(callback, f))

        def close(self):
            super().close()
            if self._lab_pool is not None:
                self._lab_pool.shutdown(wait=True)
                self._lab_pool = None

    Loop.__name__ = Loop.__qualname__ = f"Lab{base.__name__}"
    return Loop


def coroutines_namespace(loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> SimpleNamespace:
    """The coroutines style over loops made by loop_factory."""

    def run(coro):
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(coro)

    def now():
        return asyncio.get_running_loop().time()

    async def spawn(coro):
        return asyncio.get_running_loop().create_task(coro)

    async def join(task):
        return await task

    async def cancel(task):
        task.cancel()
        # wait() rather than `await task`: the task's own outcome is join()'s business.
        await asyncio.wait((task,))

    async def timeout_after(seconds, coro):
        async with asyncio.timeout(seconds):
            return await coro

    async def recv(sock, n):
        check_nonblocking(sock)
        return await asyncio.get_running_loop().sock_recv(sock, n)

    async def sendall(sock, data):
        check_nonblocking(sock)
        return await asyncio.get_running_loop().sock_sendall(sock, data)

    async def accept(sock):
        check_nonblocking(sock)
        conn, address = await asyncio.get_running_loop().sock_accept(sock)
        conn.setblocking(False)
        return conn, address

    async def connect(sock, address):
        check_nonblocking(sock)
        return await asyncio.get_running_loop().sock_connect(sock, address)

    async def recvfrom(sock, n):
        check_nonblocking(sock)
        return await asyncio.get_running_loop().sock_recvfrom(sock, n)

    async def sendto(sock, data, address):
        check_nonblocking(sock)
        return await asyncio.get_running_loop().sock_sendto(sock, data, address)

    async def run_in_thread(fn, *args):
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    return SimpleNamespace(
        run=run,
        now=now,
        CancelledError=asyncio.CancelledError,
        sleep=asyncio.sleep,
        spawn=spawn,
        join=join,
        cancel=cancel,
        timeout_after=timeout_after,
        recv=recv,
        sendall=sendall,
        accept=accept,
        connect=connect,
        recvfrom=recvfrom,
        sendto=sendto,
        run_in_thread=run_in_thread,
        Queue=asyncio.Queue,
    )


__all__ = ["callbacks_factory", "coroutines_namespace"]
