"""A primer on the machinery the loops here rest on: generators driven from outside, and epoll.

The loops with *tasks* (a task: a coroutine or generator that a loop runs one step at a time;
the designs table of ``loops/README.md`` says which speak coroutines or generators) drive them
with three calls (``send``, ``throw``, ``close``) and read one exception (``StopIteration``,
whose ``value`` is the return value). ``yield from`` and ``await`` pass those calls straight
through to the innermost generator, so whatever a task yields deep inside nested calls, its
*request* to the loop ("wake me in 0.1 s"), reaches the loop, and whatever the loop sends
comes back at that very ``yield``. ``types.coroutine`` and ``__await__`` let plain generators
take part in ``async def`` code. Then three facts a loop is built on: only an ``await`` that
yields *suspends* the task (gives the loop control), cancelling is raising an exception at
that ``await``, and ``sleep`` is a *future* (a slot for a result that does not exist yet)
that a timer completes. Last, what a readiness loop is told by the kernel: epoll
level-triggered, edge-triggered and one-shot, side by side on one socket. Read the sections in
order (the one before the last is a complete, tiny loop); each example runs as written::

    python -m loops.primer           # runs every example, says how many held
    python -m doctest -v loops/primer.py
"""


def generators_are_paused_functions():
    """A generator function returns a generator; ``send`` runs it to its next ``yield``.

    >>> def echo_twice():
    ...     received = yield "ready"        # pauses here; send(x) makes x the value
    ...     received = yield f"got {received}"
    ...     return f"done after {received}"  # the return value rides on StopIteration
    >>> gen = echo_twice()
    >>> gen.send(None)                        # start it (the same as next(gen))
    'ready'
    >>> gen.send("a")
    'got a'
    >>> try:
    ...     gen.send("b")
    ... except StopIteration as stop:
    ...     print("returned:", stop.value)
    returned: done after b

    A loop's step is exactly this: send a value in, get the next request out, and treat
    StopIteration as "the task finished, with stop.value as its result".
    """


def throw_and_close():
    """``throw`` raises an exception *at* the paused ``yield``; ``close`` raises GeneratorExit.

    >>> def careful():
    ...     try:
    ...         yield "waiting"
    ...     except TimeoutError:
    ...         yield "handled the timeout"   # it may catch it and go on
    ...     finally:
    ...         print("cleanup runs")
    >>> gen = careful()
    >>> next(gen)
    'waiting'
    >>> gen.throw(TimeoutError())             # as if the yield itself raised
    'handled the timeout'
    >>> gen.close()                           # GeneratorExit at the yield: finally runs
    cleanup runs

    This is how futures, roundrobin, traps, completions and asyncio cancel a task
    (``cancellation_is_a_throw`` below shows it on a task; trio and greenlets raise it another
    way, loops/README.md#cancellation-here-and-in-the-reference-loops): they throw
    CancelledError in at the suspension point, so the task's own ``try``/``finally`` blocks
    unwind it. A loop that abandons tasks at shutdown closes them, so their ``finally``
    blocks still run.
    """


def yield_from_delegates():
    """``yield from inner`` passes send/throw through to inner, and evaluates to its return.

    >>> def inner():
    ...     value = yield "request from deep inside"
    ...     return value * 2
    >>> def outer():
    ...     doubled = yield from inner()     # outer is suspended while inner runs
    ...     return f"outer got {doubled}"
    >>> gen = outer()
    >>> gen.send(None)                         # the inner yield comes straight out
    'request from deep inside'
    >>> try:
    ...     gen.send(21)                       # ...and the value goes straight in
    ... except StopIteration as stop:
    ...     print(stop.value)
    outer got 42

    However deep the nesting, the driver talks only to the outermost generator, and each
    request reaches it unchanged: the whole reason a loop can schedule tasks and not frames.
    """


def types_coroutine_bridges_to_await():
    """``@types.coroutine`` makes a generator awaitable, so ``async def`` code can reach a yield.

    An ``async def`` function cannot ``yield`` to its driver itself; it can only ``await``.
    Async code reaches the loop only through an awaitable whose iterator yields: a generator
    marked this way, or an object with ``__await__`` (the next section):

    >>> import types
    >>> @types.coroutine
    ... def request(*what):
    ...     return (yield what)                # the single yield (traps calls it _trap)
    >>> async def task():
    ...     answer = await request("sleep", 0.1)
    ...     return f"the loop answered {answer!r}"
    >>> coro = task()
    >>> coro.send(None)                         # a coroutine has send/throw/close too
    ('sleep', 0.1)
    >>> try:
    ...     coro.send("woken")
    ... except StopIteration as stop:
    ...     print(stop.value)
    the loop answered 'woken'
    """


def only_a_suspending_await_reaches_the_loop():
    """Awaiting a coroutine is a call, not a switch: only an await that yields gives control up.

    >>> import types
    >>> @types.coroutine
    ... def suspend():
    ...     yield "suspend"                    # a yield: the driver (the loop) gets control
    >>> async def helper(log):
    ...     log.append("helper ran")
    ...     return 42                          # no yield anywhere: returns like a function
    >>> async def task(log):
    ...     value = await helper(log)          # runs helper to its end, inside this send
    ...     log.append(f"got {value}, never having left the task")
    ...     await suspend()                    # this await yields: the task stops here
    ...     log.append("resumed")
    >>> log = []
    >>> coro = task(log)
    >>> coro.send(None)                        # one send: up to the first await that yields
    'suspend'
    >>> log
    ['helper ran', 'got 42, never having left the task']
    >>> try:
    ...     coro.send(None)
    ... except StopIteration:
    ...     print(log[-1])
    resumed

    So a task holds the loop until it reaches an await that really suspends (a sleep, a socket
    wait, a future not yet done): ``await some_coroutine()`` alone lets nothing else run, and
    a coroutine that computes for a second blocks every other task for that second.
    """


def cancellation_is_a_throw():
    """futures, roundrobin, traps, completions and asyncio cancel a task by throwing an exception
    in where the task is suspended (trio and greenlets raise it there another way).

    >>> import types
    >>> class CancelledError(BaseException): ...     # asyncio's is a BaseException too
    >>> @types.coroutine
    ... def wait(what):
    ...     return (yield what)
    >>> async def worker(log):
    ...     try:
    ...         await wait("read")             # suspended here when the cancel comes
    ...         log.append("never reached")
    ...     except CancelledError:
    ...         log.append("CancelledError raised by the await")
    ...         raise                          # re-raise: the task ends cancelled
    ...     finally:
    ...         log.append("finally ran")
    >>> log = []
    >>> coro = worker(log)
    >>> coro.send(None)                        # the task waits on a read
    'read'
    >>> try:
    ...     coro.throw(CancelledError())       # what a cancel comes down to (trio: below)
    ... except CancelledError:
    ...     log.append("out of throw(): ended cancelled")
    >>> log
    ['CancelledError raised by the await', 'finally ran', 'out of throw(): ended cancelled']

    The exception lands at the ``await`` that suspended, so cleanup is the task's own code.
    (trio raises it there another way: it resumes the task with ``send``, sending in an
    *outcome* that holds ``Cancelled``, and the task's own trap calls ``unwrap()`` on it, which
    raises: ``trio/_core/_run.py``: ``reschedule``; ``trio/_core/_traps.py``:
    ``wait_task_rescheduled``.) What a loop must add is the undoing of the wait (the read it
    registered, the timer it armed), and a rule for a task that is not suspended when cancelled
    (it is running, or is already queued to resume): asyncio records a flag and throws at the
    next resume (``_must_cancel`` in ``asyncio/tasks.py``); curio delivers it at the task's next
    blocking operation (``curio/kernel.py``: ``trap_cancel_task``), trio at its next checkpoint,
    which every one of trio's own async functions is, even one that does not block
    (``trio/_core/_run.py``: ``CancelScope``). A task may also catch the exception and go on,
    which is why "cancel" means "ask". asyncio's ``Task.cancel()`` (``asyncio/tasks.py``) asks
    and returns at once; one awaits the task to see it end. curio's ``Task.cancel``
    (``curio/task.py``, ``blocking=True`` by default) and the lab's contract (``cancel`` in
    ``loops/contract.py``) ask, then wait for the task to end.
    """


def dunder_await_makes_objects_awaitable():
    """An object is awaitable if ``__await__`` returns an iterator; ``await`` delegates to it.

    >>> class Future:
    ...     def __init__(self):
    ...         self.done, self.result = False, None
    ...     def __iter__(self):                 # `yield from future` (generators)
    ...         if not self.done:
    ...             yield self                  # hand the future itself to the driver
    ...         return self.result
    ...     __await__ = __iter__                # `await future`: asyncio/futures.py's trick
    >>> async def waiter(fut):
    ...     return await fut
    >>> fut = Future()
    >>> coro = waiter(fut)
    >>> coro.send(None) is fut                  # the driver receives the future
    True
    >>> fut.done, fut.result = True, "filled in"
    >>> try:
    ...     coro.send(None)                     # resumed once the future is done
    ... except StopIteration as stop:
    ...     print(stop.value)
    filled in

    This is how loops.futures speaks both styles with one Future.
    """


def sleep_is_a_future_and_a_timer():
    """``sleep`` built as asyncio's (``asyncio/tasks.py``: ``sleep``): a future a timer completes.

    >>> import heapq, itertools
    >>> class Future:
    ...     def __init__(self):
    ...         self.done, self.result, self.callbacks = False, None, []
    ...     def set_result(self, result):
    ...         self.done, self.result = True, result
    ...         for callback in self.callbacks:   # wake whoever waits on it
    ...             callback()
    ...     def __await__(self):
    ...         if not self.done:
    ...             yield self                    # suspend, handing the future to the loop
    ...         return self.result
    >>> class Loop:
    ...     def __init__(self):
    ...         self.now, self.timers, self.ready, self.seq = 0.0, [], [], itertools.count()
    ...     def call_later(self, delay, callback, *args):
    ...         heapq.heappush(self.timers, (self.now + delay, next(self.seq), callback, args))
    ...     def run(self, *coros):
    ...         self.ready.extend(coros)
    ...         while self.ready or self.timers:
    ...             if not self.ready:            # nothing to run: wait for the next timer
    ...                 self.now, _, callback, args = heapq.heappop(self.timers)
    ...                 callback(*args)           # (a simulated clock: it jumps there)
    ...                 continue
    ...             coro = self.ready.pop(0)
    ...             try:
    ...                 future = coro.send(None)
    ...             except StopIteration:
    ...                 continue
    ...             future.callbacks.append(lambda coro=coro: self.ready.append(coro))
    >>> loop = Loop()
    >>> async def sleep(seconds):
    ...     future = Future()
    ...     loop.call_later(seconds, future.set_result, None)  # the timer completes it
    ...     await future                                      # the task waits on it
    >>> async def napper(name, seconds, log):
    ...     await sleep(seconds)
    ...     log.append(f"{name} woke at {loop.now}")
    >>> log = []
    >>> loop.run(napper("a", 2.0, log), napper("b", 1.0, log))
    >>> log
    ['b woke at 1.0', 'a woke at 2.0']

    The loop knows nothing of sleeping: it runs timers and resumes tasks whose future is done.
    A real loop reads a real clock and, with nothing ready, waits in ``select()`` no longer
    than the next timer (``loops/why_a_loop.py`` shows that wait); ``loops.futures`` is this
    design in full.
    """


def a_loop_drives_coroutines():
    """All of it together: a loop that runs tasks until they return (no I/O, no clock).

    >>> import types
    >>> from collections import deque
    >>> @types.coroutine
    ... def switch():
    ...     yield "switch"                      # the only request this loop knows
    >>> async def worker(name, steps, log):
    ...     for step in range(steps):
    ...         log.append(f"{name}{step}")
    ...         await switch()                  # let the others run
    ...     return f"{name} finished"
    >>> def run(*coros):
    ...     ready, results = deque(coros), []
    ...     while ready:
    ...         coro = ready.popleft()
    ...         try:
    ...             request = coro.send(None)   # run it to its next yield
    ...         except StopIteration as stop:
    ...             results.append(stop.value)  # it returned
    ...             continue
    ...         if request != "switch":         # a loop rejects what it does not know
    ...             coro.throw(TypeError(f"unknown request {request!r}"))
    ...         ready.append(coro)              # back of the queue: round robin
    ...     return results
    >>> log = []
    >>> run(worker("a", 2, log), worker("b", 3, log))
    ['a finished', 'b finished']
    >>> log
    ['a0', 'b0', 'a1', 'b1', 'b2']

    The home-made loops whose tasks are coroutines or generators (futures, roundrobin, traps,
    completions) are this, plus a clock (timers), a way to wait for sockets (the designs table
    of loops/README.md says which call each one sleeps in), a way to wait for another task, and
    a way to cancel one; greenlets switches stacks instead of sending into generators.
    loops/README.md says where each of those lives.
    """


def level_and_edge_triggering():
    """What epoll reports: every ready socket at each wait, what changed, or a socket once.

    *Readable* is the kernel's word for "a ``recv`` would not block now", which has three
    causes: bytes are waiting; the peer has closed, so ``recv`` returns ``b""`` (end of file);
    or an error is pending, such as a reset by the peer, which ``recv`` raises. For a listening
    socket it means a connection waits to be accepted. *Writable*: a ``send`` would not block
    (room in the socket's buffer, or an error pending). So a loop's code after "readable" must
    handle three outcomes, not one. (A loop's *ready* is another thing: work queued to run.)

    epoll reports readiness in one of three ways, chosen per registration.
    *Level-triggered* (the default): each wait reports every fd that *is* ready at that moment.
    *Edge-triggered* (``EPOLLET``): a wait reports an fd only if something happened to it since
    the last report (bytes arrived, the peer closed).

    >>> import select, socket
    >>> a, b = socket.socketpair()
    >>> a.setblocking(False)
    >>> level, edge = select.epoll(), select.epoll()
    >>> level.register(a.fileno(), select.EPOLLIN)
    >>> edge.register(a.fileno(), select.EPOLLIN | select.EPOLLET)
    >>> def reported(epoll):
    ...     return len(epoll.poll(0))                  # fds reported, without waiting
    >>> b.send(b"abcd")
    4
    >>> reported(level), reported(edge)                # both see the bytes arrive
    (1, 1)
    >>> a.recv(2)                                      # read only half
    b'ab'
    >>> reported(level), reported(edge)                # level: still readable; edge: no news
    (1, 0)
    >>> reported(level), reported(edge)                # and so at every wait after
    (1, 0)
    >>> b.send(b"e")                                   # news: edge reports it again
    1
    >>> reported(level), reported(edge)
    (1, 1)
    >>> a.recv(1024)                                   # drained: neither reports it
    b'cde'
    >>> reported(level), reported(edge)
    (0, 0)
    >>> b.close()                                      # end of file is readable too
    >>> reported(level), reported(edge)
    (1, 1)
    >>> a.recv(1024)
    b''

    So an edge-triggered loop must read until ``recv`` raises ``BlockingIOError``: bytes it
    leaves are never reported again until more arrive, and on a request/response connection
    none will, since the peer waits for the answer to what is stuck. A level-triggered loop
    may read once per report; what it leaves is reported at the next wait. The price of level
    is the other side: a socket watched for writing is reported at *every* wait while its
    buffer has room, which is nearly always:

    >>> c, d = socket.socketpair()
    >>> writer = select.epoll()
    >>> writer.register(c.fileno(), select.EPOLLOUT)
    >>> reported(writer), reported(writer), reported(writer)
    (1, 1, 1)

    which is why a level-triggered loop watches a socket for writing only while it has bytes
    it could not send. *One-shot* (``EPOLLONESHOT``, trio's choice) reports an fd once, then
    keeps it quiet until the program re-arms it with ``modify``:

    >>> oneshot = select.epoll()
    >>> oneshot.register(c.fileno(), select.EPOLLOUT | select.EPOLLONESHOT)
    >>> reported(oneshot), reported(oneshot)       # writable all along, told once
    (1, 0)
    >>> oneshot.modify(c.fileno(), select.EPOLLOUT | select.EPOLLONESHOT)  # re-armed
    >>> reported(oneshot)
    1
    >>> for thing in (a, c, d, level, edge, writer, oneshot):
    ...     thing.close()

    Which of the three each loop uses is its ``reporting`` in the designs tables of
    ``loops/README.md``; ``tests/test_designs.py`` checks a home-made loop's against the flags
    its code registers.
    """


def main() -> int:
    import doctest
    import sys

    failed, attempted = doctest.testmod(sys.modules[__name__])
    print(f"loops.primer: {attempted - failed} of {attempted} examples hold")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
