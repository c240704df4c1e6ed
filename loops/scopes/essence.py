"""scopes, the idea alone: a cancellation belongs to a block of code, a cancel scope; while it is
cancelled every checkpoint inside raises; a nursery's children cannot outlive its block."""

import heapq
import itertools
import time
import types


class CancelledError(BaseException): ...


@types.coroutine
def _trap(*request):  # ("sleep", s) or ("children", nursery): each one a checkpoint
    return (yield request)


def _cancelled_by(s):  # when code in scope s is: the soonest deadline out to the first shield
    return s.deadline if s.shield or not s._parent else min(s.deadline, _cancelled_by(s._parent))


class CancelScope:
    def __init__(self, deadline=float("inf"), shield=False):
        self.deadline, self.shield, self._parent = deadline, shield, None

    def __enter__(self):  # the task's innermost scope is now this one
        self._parent, loop.current.scope = loop.current.scope, self
        return self

    def __exit__(self, etype, error, tb):  # a cancellation ends at the scope that was cancelled
        loop.current.scope, cancelled = self._parent, self.deadline <= time.monotonic()
        self.cancelled_caught = isinstance(error, CancelledError) and cancelled
        return self.cancelled_caught


class Nursery(CancelScope):  # its block's scope (the full loop's holds it as cancel_scope)
    def start_soon(self, fn, *args):
        self.children.add(child := Task(fn(*args), self))
        loop._ready.append(child)

    async def __aenter__(self):
        self.children, self.parent = set(), None
        return self.__enter__()

    async def __aexit__(self, etype, error, tb):
        with CancelScope(shield=True):  # wait for every child: a cancel reaches them, not this
            while self.children:
                await _trap("children", self)
        return self.__exit__(etype, error, tb)


class Task:
    def __init__(self, coro, scope):
        self.coro, self.scope = coro, scope


class Loop:
    def __init__(self):
        self._ready, self._timers, self._seq = [], [], itertools.count()

    def run(self, coro):
        self._ready.append(main := Task(coro, CancelScope()))
        while main.coro:
            if not self._ready:  # Stage 1: no I/O in this essence: sleep until the next timer
                time.sleep(max(0, self._timers[0][0] - time.monotonic()))
            while self._timers and self._timers[0][0] <= time.monotonic():  # Stage 2: timers
                self._ready.append(heapq.heappop(self._timers)[2])
            for _ in range(len(self._ready)):  # Stage 3: run each ready task until it waits
                task = self.current = self._ready.pop(0)
                cancelled = _cancelled_by(task.scope) <= time.monotonic()
                try:  # level-triggered: in a scope past its deadline every checkpoint raises
                    request = task.coro.throw(CancelledError) if cancelled else task.coro.send(None)
                except (StopIteration, CancelledError) as end:  # the last child wakes its parent
                    task.coro, task.value, n = None, getattr(end, "value", end), task.scope
                    if isinstance(n, Nursery) and not n.children.discard(task) and n.parent:
                        self._ready.extend([] if n.children else [n.parent])
                    continue
                if request[0] == "children":  # the last child to end wakes it
                    request[1].parent = task
                else:  # a sleep ends at its time, or at the deadline of a scope around it
                    when = min(time.monotonic() + request[1], _cancelled_by(task.scope))
                    heapq.heappush(self._timers, (when, next(self._seq), task))
        return main.value


if __name__ == "__main__":

    async def main():
        with CancelScope(deadline=time.monotonic() + 0.01) as scope:  # trio's move_on_after
            async with Nursery() as nursery:  # its block ends once both children have
                nursery.start_soon(_trap, "sleep", 10)  # each cancelled at its sleep
                nursery.start_soon(_trap, "sleep", 10)
            print("the deadline cancelled both children; the nursery waited for them")
            try:
                await _trap("sleep", 10)
            except CancelledError:  # caught: the next checkpoint in the scope raises it again
                print("a checkpoint in the expired scope raised CancelledError, and it was caught")
            with CancelScope(shield=True):
                await _trap("sleep", 0.01)  # the shield keeps the expired deadline out
            print("a shielded sleep finished inside the cancelled scope")
            await _trap("sleep", 0)  # raises again: outside the shield it is still cancelled
        return f"the scope ended its cancellation: cancelled_caught={scope.cancelled_caught}"

    print((loop := Loop()).run(main()))
