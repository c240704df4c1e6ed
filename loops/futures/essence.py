"""futures, the idea alone: ``yield from future`` hands the future up to the Task driving the
generator, which subscribes to it; the loop only completes futures (timers, socket waits), which
queues the task to step again. ``futures.py``, ``reactor.py``: the full loop (see README.md)."""

import heapq
import itertools
import selectors
import socket
import time
import types
from collections import deque


class Future:
    def __init__(self, loop):
        self._loop, self._state, self._result, self._callbacks = loop, "pending", None, []

    def set_result(self, result):
        self._result, self._state = result, "finished"
        for callback in self._callbacks:  # queued, never called here: no re-entry
            self._loop._ready.append((callback, self))

    def __iter__(self):
        if self._state == "pending":
            yield self  # up through every `yield from` to the Task
        return self._result

    __await__ = __iter__


class Task(Future):
    def __init__(self, coro, loop):
        super().__init__(loop)
        self._coro = coro
        loop._ready.append((self, None))

    def step(self, fut):
        try:
            yielded = self._coro.send(None if fut is None else fut._result)
        except StopIteration as stop:
            self.set_result(stop.value)  # the generator returned: wake the joiners
        else:
            yielded._callbacks.append(self)  # step again once that future is done

    __call__ = step  # a task is its own wake-up callback


class Loop:
    def __init__(self):
        self._ready = deque()  # (callback, future) pairs to run at the next turn
        self._timers, self._timer_seq = [], itertools.count()  # heap of [deadline, seq, future]
        self._selector = selectors.DefaultSelector()

    def timer(self, delay):
        timer = Future(self)
        heapq.heappush(self._timers, [time.monotonic() + delay, next(self._timer_seq), timer])
        return timer

    def run_until_complete(self, coro):
        main = Task(coro, self)
        while main._state == "pending":
            self._run_once()
        return main._result

    def _run_once(self):
        # Stage 1: wait for I/O, no longer than the next timer; complete the socket waits.
        timers, ready = self._timers, self._ready  # (selectors takes a timeout <= 0 as a poll)
        timeout = 0 if ready else timers[0][0] - time.monotonic() if timers else None
        for key, _events in self._selector.select(timeout):
            self._selector.unregister(key.fileobj)
            key.data.set_result(None)
        # Stage 2: expire timers: complete every timer future whose deadline has passed.
        while self._timers and self._timers[0][0] <= time.monotonic():
            heapq.heappop(self._timers)[2].set_result(None)
        # Stage 3: run ready: the batch queued so far (mostly tasks stepping).
        for _ in range(len(self._ready)):
            callback, fut = self._ready.popleft()
            callback(fut)


@types.coroutine
def sleep(seconds):
    return (yield from loop.timer(seconds))


@types.coroutine
def recv(sock, n):
    loop._selector.register(sock, selectors.EVENT_READ, waiter := Future(loop))  # Loop.wait
    yield from waiter  # the full loop tries the recv first, and keeps sock registered
    return sock.recv(n)


if __name__ == "__main__":
    loop, (a, b) = Loop(), socket.socketpair()

    def sender():  # a plain generator: the generators style
        yield from sleep(0.05)
        return b.send(b"ping")

    async def main():  # a coroutine: the coroutines style, on the same Future and Task
        task = Task(sender(), loop)
        print(f"main: got {await recv(a, 100)!r}; the sender's task returned {await task!r}")

    loop.run_until_complete(main())
