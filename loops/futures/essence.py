"""futures, the idea alone: ``yield from future`` hands the future up to the Task, which subscribes;
the loop completes futures (timers, socket waits) and so queues tasks to step. Full: futures.py."""

import heapq
import itertools
import selectors
import socket
import time


class CancelledError(BaseException): ...  # thrown into a cancelled task, where it waits


class Future:
    def __init__(self, loop):
        self._loop, self._state, self._result, self._callbacks = loop, "pending", None, []

    def set_result(self, result):
        self._result, self._state = result, "finished"
        self._loop._ready += [(callback, self) for callback in self._callbacks]  # never run here

    def __iter__(self):
        if self._state == "pending":
            yield self  # up through every `yield from` to the Task
        return self._result

    __await__ = __iter__  # `await future` too: one Future serves both styles


class Task(Future):
    def __init__(self, coro, loop):
        super().__init__(loop)
        self._coro, self._waiting_on = coro, None
        loop._ready.append((self.step, None))

    def step(self, fut):  # fut: the future that woke it, None at the start, or cancel()'s error
        try:
            if isinstance(fut, CancelledError):
                yielded = self._coro.throw(fut)  # raised at the `yield` where the task waits
            else:
                yielded = self._coro.send(None if fut is None else fut._result)
        except StopIteration as stop:
            self.set_result(stop.value)  # the generator returned: wake the joiners
        except CancelledError:
            self._state = "cancelled"  # (the full loop wakes its joiners with the error)
        else:
            self._waiting_on = yielded
            yielded._callbacks.append(self.step)  # step again once that future is done

    def cancel(self):  # a waiting task stops waiting; steps with the error in stage 3
        self._waiting_on._callbacks.remove(self.step)
        self._loop._ready.append((self.step, CancelledError()))


class Loop:
    def __init__(self):
        self._ready, self._selector = [], selectors.DefaultSelector()  # (callback, future) pairs
        self._timers, self._timer_seq = [], itertools.count()  # heap of [deadline, seq, future]

    def timer(self, delay):  # sleeping is `yield from loop.timer(delay)`
        timer = Future(self)
        heapq.heappush(self._timers, [time.monotonic() + delay, next(self._timer_seq), timer])
        return timer

    def wait(self, sock, event):  # a future completed when sock is readable (or writable)
        return self._selector.register(sock, event, Future(self)).data  # (the key's data)

    def run_until_complete(self, coro):
        main = Task(coro, self)
        while main._state == "pending":  # one turn of the loop, in three stages:
            timeout = 0 if self._ready else None  # Stage 1, wait for I/O: poll if work is ready,
            if self._timers and not self._ready:  # else no longer than the next timer
                timeout = max(0, self._timers[0][0] - time.monotonic())
            for key, _events in self._selector.select(timeout):
                self._selector.unregister(key.fileobj)  # the full loop keeps it registered
                key.data.set_result(None)
            while self._timers and self._timers[0][0] <= time.monotonic():  # Stage 2, timers
                heapq.heappop(self._timers)[2].set_result(None)  # complete each one that is due
            batch, self._ready = self._ready, []  # Stage 3, run ready: the batch queued so far
            for callback, fut in batch:
                callback(fut)
        return main._result


if __name__ == "__main__":
    loop, (a, b) = Loop(), socket.socketpair()

    def victim():  # a plain generator: the generators style
        try:
            yield from loop.timer(10)
        except CancelledError:  # thrown in by Task.step: it lands here, at the `yield from`
            b.send(b"CancelledError landed at the victim's `yield from loop.timer(10)`")
            raise  # and ends its task, cancelled

    async def main():  # a coroutine: the coroutines style, on the same Future and Task
        victim_task = Task(victim(), loop)
        await loop.timer(0.05)  # a sleep: the victim waits on its 10 s timer by now
        victim_task.cancel()
        await loop.wait(a, selectors.EVENT_READ)  # until the victim's last words arrive
        print(f"main: got {a.recv(100)!r}; the victim's task is {victim_task._state}")

    loop.run_until_complete(main())
