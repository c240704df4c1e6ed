"""Tasks: spawning, joining and cancelling concurrent work."""

from conformance.harness import prop


@prop("core")
def test_join_returns_the_result(play):
    assert play() == ("done", 42)


@test_join_returns_the_result.generators
def _(co):
    def child(x):
        yield from co.sleep(0.001)
        return ("done", x)

    task = yield from co.spawn(child(42))
    return (yield from co.join(task))


@test_join_returns_the_result.coroutines
async def _(co):
    async def child(x):
        await co.sleep(0.001)
        return ("done", x)

    task = await co.spawn(child(42))
    return await co.join(task)


@prop("core")
def test_cancel_delivers_cancelled_error_at_the_suspension_point(play):
    assert play() == ["started", "cancelled at sleep", "finally ran"]


@test_cancel_delivers_cancelled_error_at_the_suspension_point.generators
def _(co):
    events = []

    def child():
        events.append("started")
        try:
            yield from co.sleep(10)
        except co.CancelledError:
            events.append("cancelled at sleep")
            raise
        finally:
            events.append("finally ran")

    task = yield from co.spawn(child())
    yield from co.sleep(0.01)
    yield from co.cancel(task)
    return events


@test_cancel_delivers_cancelled_error_at_the_suspension_point.coroutines
async def _(co):
    events = []

    async def child():
        events.append("started")
        try:
            await co.sleep(10)
        except co.CancelledError:
            events.append("cancelled at sleep")
            raise
        finally:
            events.append("finally ran")

    task = await co.spawn(child())
    await co.sleep(0.01)
    await co.cancel(task)
    return events
