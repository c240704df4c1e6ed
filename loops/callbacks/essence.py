"""callbacks, the idea alone: a ready queue, a timer heap and a selector, nothing else.

Every piece of work is a callback in a Handle. One turn of ``Loop._run_once`` waits on the
selector no longer than the next timer, moves due timers to the ready queue, and runs the batch
in the queue when its stage 3 begins. ``reactor.py`` is the full loop; README.md says what it adds.
"""

import collections
import heapq
import itertools
import selectors
import socket
import time


class Handle:
    """A callback and its arguments; cancel() makes the loop skip it."""

    def __init__(self, callback, args):
        self._callback, self._args, self._cancelled = callback, args, False

    def cancel(self):
        self._cancelled = True


class TimerHandle(Handle):
    """A handle due at loop time when(); it waits in the heap until then."""

    def __init__(self, when, callback, args):
        super().__init__(callback, args)
        self._when = when


class Loop:
    def __init__(self):
        self._ready = collections.deque()  # handles for the next stage 3, FIFO
        self._timers = []  # heap of (when, seq, TimerHandle): the earliest on top
        self._timer_seq = itertools.count()  # breaks ties: equal deadlines fire FIFO
        self._selector = selectors.DefaultSelector()  # fd -> the reader Handle, as key.data
        self._stopping = False

    def time(self):
        return time.monotonic()

    def call_soon(self, callback, *args):
        self._ready.append(handle := Handle(callback, args))
        return handle

    def call_later(self, delay, callback, *args):
        handle = TimerHandle(self.time() + delay, callback, args)
        heapq.heappush(self._timers, (handle._when, next(self._timer_seq), handle))
        return handle

    def add_reader(self, fd, callback, *args):  # add_writer: the same with EVENT_WRITE
        self._selector.register(fd, selectors.EVENT_READ, Handle(callback, args))

    def remove_reader(self, fd):
        self._selector.unregister(fd)

    def stop(self):
        self._stopping = True

    def run_forever(self):
        while not self._stopping:
            self._run_once()
        self._stopping = False

    def _run_once(self):
        # Stage 1: wait for I/O, no longer than the next timer (not at all if work is ready).
        timeout = 0 if self._ready else None
        if self._timers and not self._ready:
            timeout = max(0, self._timers[0][0] - self.time())
        for key, _events in self._selector.select(timeout):
            self._ready.append(key.data)
        # Stage 2: expire timers: every timer due by now joins the ready queue, in order.
        while self._timers and self._timers[0][0] <= self.time():
            self._ready.append(heapq.heappop(self._timers)[2])
        # Stage 3: run the batch ready now; what it schedules waits for the next turn.
        for _ in range(len(self._ready)):
            handle = self._ready.popleft()
            if not handle._cancelled:
                handle._callback(*handle._args)


if __name__ == "__main__":
    loop, (a, b) = Loop(), socket.socketpair()

    def on_readable():
        print(f"reader: {a.recv(100)!r} arrived, {loop.time() - start:.2f} s in")
        loop.remove_reader(a)
        loop.stop()

    start = loop.time()
    loop.add_reader(a, on_readable)
    loop.call_later(0.1, b.send, b"ping")
    loop.call_later(0.05, print, "timer: 0.05 s, before the ping")
    loop.call_later(0.01, print, "never printed").cancel()
    loop.call_soon(print, "call_soon: first, at the first turn")
    loop.run_forever()
