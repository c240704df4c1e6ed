"""Soak: a long run of ordinary work leaves memory flat and no descriptor behind.

Two soaks per loop and style, echo under the load generator and tasks spawned and joined in
waves, each with a warm-up first: a Python process grows while its allocator, caches and free
lists fill up and then stays put, so what grows after that is a leak. The bound on growth after
warm-up is :data:`RSS_BOUND` for both; sizes, measures and where the idea comes from:
``conformance/README.md``, "Faults".
"""

from __future__ import annotations

import gc
import os

from conformance.harness import prop
from conformance.processes import ECHO_READY, case_prop, echo_command, load, running, until
from conformance.support import open_fds

SIZES = {  # --soak NAME -> echo requests and tasks per case
    "ci": {"requests": 20_000, "tasks": 10_000},
    "full": {"requests": 1_000_000, "tasks": 100_000},
}
CONNECTIONS = 100
MESSAGE = 64  # bytes per echo: the soak is about counts, not bandwidth
WAVE = 1_000  # tasks per wave
RSS_BOUND = 8 * 2**20  # bytes of resident memory the process may gain after warm-up
MIB = 2**20


def soak_size(config, what: str) -> int:
    return SIZES[config.getoption("--soak")][what]


# --- echo ------------------------------------------------------------------------------------


@case_prop("io", timeout=1800)
def test_a_soak_of_echo_requests_grows_no_memory_and_leaves_no_descriptor(
    case, tmp_path, request, record_property
):
    target = soak_size(request.config, "requests")
    options = ["--connections", str(CONNECTIONS), "--size", str(MESSAGE)]
    rounds = []
    with running(echo_command(case), ECHO_READY, tmp_path) as server:
        warm = load(server.port, tmp_path, *options, "--duration", "1")
        rounds.append(warm)
        until(lambda: server.connections() == 0)
        rss_warm, fds_before = server.rss(), server.fds()  # after what a first run creates
        served = 0
        while served < target and all(r["ok"] for r in rounds):
            rate = max(r["requests_per_s"] for r in rounds) or 1000.0
            seconds = min(30.0, max(1.0, (target - served) / rate))
            rounds.append(load(server.port, tmp_path, *options, "--duration", f"{seconds:.1f}"))
            served += rounds[-1]["requests"]
        until(lambda: server.connections() == 0)
        rss_end, fds_after = server.rss(), server.fds()
    growth = rss_end - rss_warm
    record_property(
        "soak",
        {
            "echo requests": served,
            "echo RSS growth after warm-up (MiB)": round(growth / MIB, 2),
            "echo fds left": fds_after - fds_before,
        },
    )
    seen = {
        "every byte verified": [r["output"][-300:] for r in rounds if not r["ok"]] or True,
        "requests served": served >= target,
        f"RSS growth after warm-up within {RSS_BOUND // MIB} MiB": growth <= RSS_BOUND
        or f"{growth / MIB:.1f} MiB",
        "descriptors left open": fds_after - fds_before,
    }
    assert seen == {
        "every byte verified": True,
        "requests served": True,
        f"RSS growth after warm-up within {RSS_BOUND // MIB} MiB": True,
        "descriptors left open": 0,
    }


# --- tasks -----------------------------------------------------------------------------------


def rss() -> int:
    """This process's resident memory, bytes (/proc/self/statm: pages)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _measure(state: dict, wave: int, waves: int) -> None:
    """Note RSS after the warm-up waves (a tenth of them) and after the last one."""
    if wave == max(1, waves // 10) - 1:
        gc.collect()
        state["rss warm"], state["fds warm"] = rss(), open_fds()
    if wave == waves - 1:
        gc.collect()
        state["rss end"], state["fds end"] = rss(), open_fds()


@prop("core", timeout=1800)
def test_a_soak_of_tasks_spawned_and_joined_in_waves_grows_no_memory(
    play, request, record_property
):
    tasks = soak_size(request.config, "tasks")
    state = {}
    joined = play(tasks // WAVE, state)
    growth = state["rss end"] - state["rss warm"]
    left = len(state["fds end"] - state["fds warm"])
    record_property(
        "soak",
        {
            "tasks": joined,
            "tasks RSS growth after warm-up (MiB)": round(growth / MIB, 2),
            "tasks fds left": left,
        },
    )
    seen = {
        "every task joined": joined == tasks,
        f"RSS growth after warm-up within {RSS_BOUND // MIB} MiB": growth <= RSS_BOUND
        or f"{growth / MIB:.1f} MiB",
        "descriptors left open": left,
    }
    assert seen == {
        "every task joined": True,
        f"RSS growth after warm-up within {RSS_BOUND // MIB} MiB": True,
        "descriptors left open": 0,
    }


@test_a_soak_of_tasks_spawned_and_joined_in_waves_grows_no_memory.callbacks
def _(loop, waves, state):
    # The callbacks style has no tasks: a "task" is a callback that schedules its own end.
    joined = 0
    wave = 0

    def start_wave():
        remaining = [WAVE]

        def end(i):
            nonlocal joined
            joined += 1
            remaining[0] -= 1
            if not remaining[0]:
                finish_wave()

        for i in range(WAVE):
            loop.call_soon(loop.call_later, 0, end, i)

    def finish_wave():
        nonlocal wave
        _measure(state, wave, waves)
        wave += 1
        if wave < waves:
            loop.call_soon(start_wave)
        else:
            loop.stop()

    loop.call_soon(start_wave)
    loop.run_forever()
    return joined


@test_a_soak_of_tasks_spawned_and_joined_in_waves_grows_no_memory.generators
def _(co, waves, state):
    def job(i):
        yield from co.sleep(0)
        return i

    joined = 0
    for wave in range(waves):
        tasks = []
        for i in range(WAVE):
            tasks.append((yield from co.spawn(job(i))))
        for i, task in enumerate(tasks):
            joined += (yield from co.join(task)) == i
        del tasks
        _measure(state, wave, waves)
    return joined


@test_a_soak_of_tasks_spawned_and_joined_in_waves_grows_no_memory.coroutines
async def _(co, waves, state):
    async def job(i):
        await co.sleep(0)
        return i

    joined = 0
    for wave in range(waves):
        tasks = [await co.spawn(job(i)) for i in range(WAVE)]
        for i, task in enumerate(tasks):
            joined += await co.join(task) == i
        del tasks
        _measure(state, wave, waves)
    return joined


@test_a_soak_of_tasks_spawned_and_joined_in_waves_grows_no_memory.blocking
def _(co, waves, state):
    def job(i):
        co.sleep(0)
        return i

    joined = 0
    for wave in range(waves):
        tasks = [co.spawn(job, i) for i in range(WAVE)]
        for i, task in enumerate(tasks):
            joined += co.join(task) == i
        del tasks
        _measure(state, wave, waves)
    return joined
