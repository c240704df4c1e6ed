"""traps, the idea alone: every ``await`` that asks the kernel something ends in ``_trap``, yielding
a request (``("sleep", 0.1)``) for its trap table; a cancel undoes the wait and throws in."""

import heapq
import itertools
import selectors
import socket
import time
import types
from collections import deque

SUSPEND = object()  # what a trap handler returns for "the task waits"; else it is the answer


class CancelledError(BaseException): ...


@types.coroutine
def _trap(*request):
    return (yield request)


class Task:
    def __init__(self, coro):
        self.coro, self.value, self.throw, self.unwait, self.done = coro, None, None, None, False


class Loop:
    def __init__(self):
        self._ready = deque()  # tasks to resume, FIFO
        self._timers, self._timer_seq, self._sleepers = [], itertools.count(), {}  # seq -> task
        self._selector = selectors.DefaultSelector()  # sock -> the task waiting to read it
        self._traps = {"sleep": self._trap_sleep, "spawn": self._trap_spawn, "read": self._trap_io}
        self._traps["cancel"] = self._trap_cancel  # the trap table: handler(task, request)

    def _trap_sleep(self, task, request):
        heapq.heappush(self._timers, (time.monotonic() + request[1], seq := next(self._timer_seq)))
        self._sleepers[seq], task.unwait = task, lambda: self._sleepers.pop(seq)  # heap: lazily
        return SUSPEND

    def _trap_spawn(self, task, request):
        self._ready.append(child := Task(request[1]))
        return child  # answered at once: the spawner runs on, no switch

    def _trap_io(self, task, request):
        self._selector.register(request[1], selectors.EVENT_READ, task)
        task.unwait = lambda: self._selector.unregister(request[1])
        return SUSPEND

    def _trap_cancel(self, task, request):  # the full loop also waits for the victim to end
        victim, victim.throw = request[1], CancelledError()
        if victim not in self._ready:  # still waiting: undo the wait, wake it to throw in
            victim.unwait()
            self._ready.append(victim)

    def run(self, coro):
        self._ready.append(main := Task(coro))
        while not main.done:
            # Stage 1: wait for I/O, blocking (until the next timer) only while nothing is ready.
            timeout = max(0, self._timers[0][0] - time.monotonic()) if self._timers else None
            for key, _events in self._selector.select(0 if self._ready else timeout):
                self._selector.unregister(key.fileobj)  # the full loop keeps it registered
                self._ready.append(key.data)
            # Stage 2: expire timers: the sleepers whose deadline has passed are ready.
            while self._timers and self._timers[0][0] <= time.monotonic():
                if task := self._sleepers.pop(heapq.heappop(self._timers)[1], None):
                    self._ready.append(task)
            # Stage 3: run each ready task until it suspends (non-blocking traps answer at once).
            for _ in range(len(self._ready)):
                task = self._ready.popleft()
                while True:
                    try:  # send the trap's answer in, or throw a cancellation in at the await
                        resume = task.coro.throw if task.throw else task.coro.send
                        request, task.throw = resume(task.throw or task.value), None
                    except (StopIteration, CancelledError) as end:  # returned, or cancelled
                        task.done, task.value = True, getattr(end, "value", end)
                        break
                    task.value = self._traps[request[0]](task, request)
                    if task.value is SUSPEND:
                        task.value = None
                        break
        return main.value


if __name__ == "__main__":

    async def main():
        a, b = socket.socketpair()
        with a, b:  # s sleeps, r waits to read a: both are cancelled where they wait
            s, r = [await _trap("spawn", c) for c in (_trap("sleep", 10), _trap("read", a))]
            await _trap("sleep", 0.01)  # both run to their await and suspend there
            await _trap("cancel", s)
            await _trap("cancel", r)  # its wait undone: the ping below is main's to read
            b.send(b"ping")
            await _trap("read", a)
            print(f"spawn answered {type(r).__name__} at once; thrown in: {s.value!r}, {r.value!r}")
            return a.recv(100)

    print(f"main returned {Loop().run(main())!r}")
