"""Scheduling: the order in which ready work runs."""

from conformance.harness import prop


@prop("core")
def test_call_soon_runs_in_fifo_order(play):
    assert play() == list(range(10))


@test_call_soon_runs_in_fifo_order.callbacks
def _(loop):
    order = []
    for i in range(10):
        loop.call_soon(order.append, i)
    loop.call_soon(loop.stop)
    loop.run_forever()
    return order


@test_call_soon_runs_in_fifo_order.generators
def _(co):
    order = []

    def worker(i):
        order.append(i)
        yield from co.sleep(0)

    tasks = []
    for i in range(10):
        tasks.append((yield from co.spawn(worker(i))))
    for task in tasks:
        yield from co.join(task)
    return order


@test_call_soon_runs_in_fifo_order.coroutines
async def _(co):
    order = []

    async def worker(i):
        order.append(i)
        await co.sleep(0)

    tasks = [await co.spawn(worker(i)) for i in range(10)]
    for task in tasks:
        await co.join(task)
    return order
