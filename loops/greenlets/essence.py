"""greenlets, the idea alone: a task calls ``recv`` or ``sleep`` like blocking code; where it would
block, it notes what it waits for and switches to the hub, which switches back when it is due."""

import heapq
import itertools
import selectors
import socket
import time
from collections import deque

import greenlet


class CancelledError(BaseException): ...


class Task:
    def __init__(self, hub, fn, args):
        self.glet = greenlet.greenlet(lambda: hub.task_main(self, fn, args), parent=hub.glet)
        self.hub, self.throw, self.unwait, self.done, self.result = hub, None, None, False, None


class Hub:
    def __init__(self):
        self.glet = greenlet.greenlet(self._loop)  # the hub: a greenlet like the tasks
        self.ready = deque()  # tasks to switch into, FIFO
        self._timers, self._seq, self._timed = [], itertools.count(), {}  # seq -> task
        self._selector = selectors.DefaultSelector()  # sock -> the task waiting to read it

    def suspend(self, task, unwait):  # called by a task: switch away until woken
        task.unwait = unwait
        self.glet.switch()
        if task.throw is not None:  # resumed to raise what it was interrupted with
            raise task.throw

    def task_main(self, task, fn, args):
        try:  # (the full hub also checks for a cancel before fn ever runs)
            task.result = fn(*args)
        except CancelledError as error:
            task.result = error
        task.done = True

    def interrupt(self, task, error):  # a cancel: undo the wait, make it ready to raise
        task.throw, _ = error, task.unwait()
        self.ready.append(task)

    def _loop(self):
        while not self.main.done:
            # Stage 1: wait for I/O, blocking (until the next timer) only while nothing is ready.
            timeout = max(0, self._timers[0][0] - time.monotonic()) if self._timers else None
            for key, _events in self._selector.select(0 if self.ready else timeout):
                self._selector.unregister(key.fileobj)
                self.ready.append(key.data)
            # Stage 2: expire timers: the sleepers whose deadline has passed are ready.
            while self._timers and self._timers[0][0] <= time.monotonic():
                if task := self._timed.pop(heapq.heappop(self._timers)[1], None):
                    self.ready.append(task)
            # Stage 3: switch into each ready task; it runs until it switches back to the hub.
            for _ in range(len(self.ready)):
                self.ready.popleft().glet.switch()


def sleep(task, seconds):  # a blocking call on the hub: note what it waits for, switch away
    heapq.heappush((hub := task.hub)._timers, (time.monotonic() + seconds, seq := next(hub._seq)))
    hub._timed[seq] = task  # a cancel pops it; the heap entry dies lazily
    hub.suspend(task, lambda: hub._timed.pop(seq))


def recv(task, sock, n):  # try first; only if it would block, wait on the hub and retry
    while True:  # (the full hub keeps the fd registered across waits)
        try:
            return sock.recv(n)
        except BlockingIOError:
            task.hub._selector.register(sock, selectors.EVENT_READ, task)
            task.hub.suspend(task, lambda: task.hub._selector.unregister(sock))


def run(fn, *args):
    hub = Hub()
    hub.main = Task(hub, fn, (hub, *args))
    hub.ready.append(hub.main)
    hub.glet.switch()  # back here when the loop ends: the main task is done
    return hub.main.result


if __name__ == "__main__":

    def main(hub):
        a, b = socket.socketpair()
        with a, b:  # s sleeps, r waits to read a: no await marks where either is switched away
            a.setblocking(False)
            s, r = Task(hub, lambda: sleep(s, 10), ()), Task(hub, lambda: recv(r, a, 100), ())
            hub.ready.extend((s, r))
            sleep(hub.main, 0.01)  # both run to their blocking call and switch to the hub
            hub.interrupt(s, CancelledError("s"))
            hub.interrupt(r, CancelledError("r"))  # its wait undone: the ping is main's to read
            b.send(b"ping")
            sleep(hub.main, 0.01)
            print(f"raised in the tasks where they waited: {s.result!r}, {r.result!r}")
            return recv(hub.main, a, 100)

    print(f"main returned {run(main)!r}")
