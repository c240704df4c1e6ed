"""Timers: when scheduled work fires."""

from conformance.harness import prop

DELAYS = [0.03, 0.01, 0.02, 0.0, 0.025, 0.005]


@prop("core")
def test_timers_fire_in_deadline_order(play):
    assert play() == sorted(DELAYS)


@test_timers_fire_in_deadline_order.callbacks
def _(loop):
    fired = []
    for delay in DELAYS:
        loop.call_later(delay, fired.append, delay)
    loop.call_later(max(DELAYS) + 0.01, loop.stop)
    loop.run_forever()
    return fired


@test_timers_fire_in_deadline_order.generators
def _(co):
    fired = []

    def sleeper(delay):
        yield from co.sleep(delay)
        fired.append(delay)

    tasks = []
    for delay in DELAYS:
        tasks.append((yield from co.spawn(sleeper(delay))))
    for task in tasks:
        yield from co.join(task)
    return fired


@test_timers_fire_in_deadline_order.coroutines
async def _(co):
    fired = []

    async def sleeper(delay):
        await co.sleep(delay)
        fired.append(delay)

    tasks = [await co.spawn(sleeper(delay)) for delay in DELAYS]
    for task in tasks:
        await co.join(task)
    return fired


@prop("core")
def test_sleep_returns_after_its_delay(play):
    elapsed = play(0.05)
    # Never early; the clock is the loop's own (lateness is the bench's business, not a test's).
    assert elapsed >= 0.05 - 0.001


@test_sleep_returns_after_its_delay.callbacks
def _(loop, delay):
    start = loop.time()
    ended = []
    loop.call_later(delay, lambda: (ended.append(loop.time()), loop.stop()))
    loop.run_forever()
    return ended[0] - start


@test_sleep_returns_after_its_delay.generators
def _(co, delay):
    start = co.now()
    yield from co.sleep(delay)
    return co.now() - start


@test_sleep_returns_after_its_delay.coroutines
async def _(co, delay):
    start = co.now()
    await co.sleep(delay)
    return co.now() - start
