"""traps, the idea alone: a coroutine never sees the loop; every ``await`` that asks it something
ends in ``_trap``, yielding a request such as ``("sleep", 0.1)`` for the kernel's trap table.
``kernel.py``, ``traps.py``, ``task.py``: the full loop (README.md says what they add)."""

import heapq
import itertools
import selectors
import socket
import time
import types
from collections import deque

SUSPEND = object()  # a trap handler's answer: the task waits; something else makes it ready


@types.coroutine
def _trap(*request):
    return (yield request)


async def sleep(seconds):
    return await _trap("sleep", seconds)


async def spawn(coro):
    return await _trap("spawn", coro)


async def wait_readable(sock):
    return await _trap("read", sock)


class Task:
    def __init__(self, coro):
        self.coro, self.state, self.value, self.result = coro, "ready", None, None


class Loop:
    def __init__(self):
        self._ready = deque()  # tasks to resume, FIFO
        self._timers, self._timer_seq, self._sleepers = [], itertools.count(), {}  # seq -> task
        self._selector = selectors.DefaultSelector()  # sock -> the task waiting to read it
        # The trap table: handler(task, request) returns the answer, or SUSPEND.
        self._traps = {"sleep": self._trap_sleep, "spawn": self._trap_spawn, "read": self._trap_io}

    def _trap_sleep(self, task, request):
        seq = next(self._timer_seq)
        heapq.heappush(self._timers, (time.monotonic() + request[1], seq))
        self._sleepers[seq], task.state = task, "sleeping"
        return SUSPEND

    def _trap_spawn(self, task, request):
        self._ready.append(child := Task(request[1]))
        return child  # answered at once: the spawner runs on, no switch

    def _trap_io(self, task, request):
        self._selector.register(request[1], selectors.EVENT_READ, task)
        task.state = "reading"
        return SUSPEND

    def run(self, coro):
        self._ready.append(main := Task(coro))
        while main.state != "done":
            # Stage 1: wait for I/O, blocking (until the next timer) only while nothing is ready.
            timeout = 0 if self._ready else None
            if self._timers and not self._ready:
                timeout = max(0, self._timers[0][0] - time.monotonic())
            for key, _events in self._selector.select(timeout):
                self._selector.unregister(key.fileobj)  # the full loop keeps it registered
                self._ready.append(key.data)
            # Stage 2: expire timers: the sleepers whose deadline has passed are ready.
            while self._timers and self._timers[0][0] <= time.monotonic():
                self._ready.append(self._sleepers.pop(heapq.heappop(self._timers)[1]))
            # Stage 3: run each ready task until it suspends (non-blocking traps answer at once).
            for _ in range(len(self._ready)):
                task = self._ready.popleft()
                while True:
                    try:
                        request = task.coro.send(task.value)
                    except StopIteration as stop:
                        task.state, task.result = "done", stop.value
                        break
                    task.value = self._traps[request[0]](task, request)
                    if task.value is SUSPEND:
                        task.value = None
                        break
        return main.result


if __name__ == "__main__":

    async def writer(sock):
        await sleep(0.05)
        sock.send(b"ping")

    async def main():
        a, b = socket.socketpair()
        child = await spawn(writer(b))  # a trap answered at once: main runs on
        print(f"main: the spawn trap answered {type(child).__name__} at once; now main waits")
        await wait_readable(a)  # suspends main until the writer's ping arrives
        return a.recv(100)

    print(f"main returned {Loop().run(main())!r}")
