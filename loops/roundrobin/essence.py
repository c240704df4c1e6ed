"""roundrobin, the idea alone: each tick resumes every runnable task exactly once.

A task yields a plain request tuple (``("yield",)``, ``("sleep", 0.1)``, ``("read", sock)``);
the loop handles it at once: back on the runnable list, onto the timer heap, or into the
selector. ``scheduler.py`` and ``api.py`` are the full loop; README.md says what they add.
"""

import heapq
import itertools
import selectors
import socket
import time
import types


@types.coroutine
def sleep(seconds):  # sleep(0) is a checkpoint: the task runs again next tick
    yield ("sleep", seconds) if seconds > 0 else ("yield",)


@types.coroutine
def recv(sock, n):
    yield ("read", sock)  # the full loop: a checkpoint, then recv; on a drained socket, this wait
    return sock.recv(n)


class Task:
    def __init__(self, coro):
        self.coro, self.send, self.done, self.result = coro, None, False, None


class Loop:
    def __init__(self):
        self._runnable = []  # the tasks the next tick resumes, in order
        self._timers, self._timer_seq = [], itertools.count()  # heap of [deadline, seq, task]
        self._selector = selectors.DefaultSelector()  # sock -> the task waiting to read it
        self._handlers = {"yield": self._next_tick, "sleep": self._sleep, "read": self._wait_io}

    def spawn(self, coro):  # waits for nothing, so it is a call, not a request
        self._runnable.append(task := Task(coro))
        return task

    def _next_tick(self, task, request):
        self._runnable.append(task)

    def _sleep(self, task, request):
        heapq.heappush(self._timers, [time.monotonic() + request[1], next(self._timer_seq), task])

    def _wait_io(self, task, request):
        self._selector.register(request[1], selectors.EVENT_READ, task)

    def run(self, coro):
        main = self.spawn(coro)
        while not main.done:
            # 1. Wait for I/O: poll if something is runnable, else block until the next timer.
            timeout = 0 if self._runnable else None
            if self._timers and not self._runnable:
                timeout = max(0, self._timers[0][0] - time.monotonic())
            for key, _events in self._selector.select(timeout):
                self._selector.unregister(key.fileobj)  # the full loop keeps it registered
                self._runnable.append(key.data)
            # 2. Expire timers: wake every sleeper whose deadline has passed, earliest first.
            while self._timers and self._timers[0][0] <= time.monotonic():
                self._runnable.append(heapq.heappop(self._timers)[2])
            # 3. Run ready: one tick over a snapshot; what the tasks request waits for the next.
            batch, self._runnable = self._runnable, []
            for task in batch:
                try:
                    request = task.coro.send(task.send)
                except StopIteration as stop:
                    task.done, task.result = True, stop.value
                else:
                    self._handlers[request[0]](task, request)
        return main.result


if __name__ == "__main__":
    loop, turns = Loop(), []

    async def spinner(name):
        for i in range(3):
            turns.append(f"{name}{i}")
            await sleep(0)  # a checkpoint: one slice per tick, whoever else is runnable

    async def main():
        a, b = socket.socketpair()
        loop.spawn(spinner("a"))
        loop.spawn(spinner("b"))
        await sleep(0.02)
        b.send(b"ping")
        return await recv(a, 100)

    print(f"main read {loop.run(main())!r}; the spinners took turns: {' '.join(turns)}")
