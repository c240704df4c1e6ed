"""The completions loop's own machinery: the ring, the buffer a cancelled operation still lends
the kernel, and the variant made unavailable on purpose.

Loop properties (timers, cancellation, I/O, threads...) are the conformance suite's; these
check what only a completion loop has. Where io_uring cannot be set up, the variant is
unavailable and everything here but the availability test is skipped.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import loops

ROOT = Path(__file__).resolve().parent.parent
AVAILABLE = "completions" in loops.available()
needs_io_uring = pytest.mark.skipif(
    not AVAILABLE, reason=f"io_uring unavailable: {loops.discover()['completions'].unavailable}"
)


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


# -- availability ------------------------------------------------------------------------------


def test_io_uring_unavailable_on_purpose_makes_the_variant_unavailable_with_the_reason():
    env = {**os.environ, "LAB_COMPLETIONS_UNAVAILABLE": "seccomp says no"}
    probe = (
        "import loops\n"
        "v = loops.discover()['completions']\n"
        "print(repr(v.unavailable))\n"
        "print('completions' in loops.available())\n"
        "try:\n"
        "    loops.get('completions')\n"
        "except loops.UnavailableVariantError as error:\n"
        "    print('get:', error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    reason, listed, got = done.stdout.splitlines()
    assert "io_uring cannot be set up here" in reason and "seccomp says no" in reason
    assert listed == "False"
    assert got.startswith("get:") and "seccomp says no" in got
    listing = subprocess.run(
        [sys.executable, "-m", "loops"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert listing.returncode == 0, listing.stderr
    assert "seccomp says no" in listing.stdout


def test_the_probe_reports_the_kernels_refusal(monkeypatch):
    from loops.completions import uring

    monkeypatch.setattr(uring, "_syscall", lambda *args: -1)
    monkeypatch.setattr(uring.ctypes, "get_errno", lambda: 1)  # EPERM, as under seccomp
    with pytest.raises(PermissionError, match="io_uring_setup") as refused:
        uring.probe()
    assert "seccomp" in uring.why(refused.value) or "io_uring_disabled" in uring.why(refused.value)


# -- the ring ------------------------------------------------------------------------------------


@needs_io_uring
def test_a_ring_is_set_up_round_trips_an_operation_and_closes_without_a_trace():
    from loops.completions import uring

    before = set(os.listdir("/proc/self/fd"))
    ring = uring.Ring(8, 32)
    assert ring.sq_entries == 8 and ring.cq_entries == 32 and ring.space == 8
    for user_data in (7, 8, 9):
        ring.prepare(uring.OP_NOP, user_data=user_data)
    assert ring.space == 5 and ring.pending == 3
    assert ring.enter(None) == 3  # one syscall: three submitted, waited for a completion
    assert sorted(ring.reap()) == [(7, 0), (8, 0), (9, 0)]
    assert ring.reap() == [] and ring.space == 8
    ring.close()
    ring.close()  # idempotent
    assert set(os.listdir("/proc/self/fd")) == before


@needs_io_uring
def test_a_lone_completion_is_reaped_once_at_every_slot_of_the_cq():
    """One NOP a turn on an 8-slot CQ: Ring.reap's path for a lone CQE, at every slot, twice."""
    from loops.completions import uring

    ring = uring.Ring(4, 8)
    try:
        for n in range(16):
            ring.prepare(uring.OP_NOP, user_data=200 + n)
            ring.enter(None)
            got = ring.reap()
            while not got:
                ring.enter(None)
                got = ring.reap()
            assert got == [(200 + n, 0)] and ring.reap() == []
    finally:
        ring.close()


@needs_io_uring
def test_a_reap_whose_completions_wrap_past_the_cq_end_returns_them_all_in_order():
    """Three NOPs a turn on an 8-slot CQ: most reaps start near the end of the CQ and finish at
    its start, the two runs Ring.reap unpacks separately."""
    from loops.completions import uring

    ring = uring.Ring(4, 8)
    try:
        seen = []
        for turn in range(20):
            for i in range(3):
                ring.prepare(uring.OP_NOP, user_data=100 + turn * 3 + i)
            ring.enter(None)
            got = ring.reap()
            while len(got) < 3:
                ring.enter(None)
                got += ring.reap()
            seen += got
        assert seen == [(100 + n, 0) for n in range(60)]
    finally:
        ring.close()


@needs_io_uring
def test_a_ring_wraps_around_more_times_than_it_has_slots():
    from loops.completions import uring

    ring = uring.Ring(4, 8)
    try:
        for turn in range(50):
            for i in range(4):
                ring.prepare(uring.OP_NOP, user_data=turn * 4 + i)
            ring.enter(None)
            got = ring.reap()
            while len(got) < 4:  # NOPs complete at submission, but do not count on it
                ring.enter(None)
                got += ring.reap()
            assert sorted(ud for ud, _ in got) == list(range(turn * 4, turn * 4 + 4))
    finally:
        ring.close()


@needs_io_uring
def test_a_negative_res_is_the_oserror_python_would_raise():
    co = loops.get("completions").coroutines

    async def main():
        a, b = _pair()
        b.close()
        try:
            await co.sendall(a, b"x")  # the peer is gone: -EPIPE
        except OSError as error:
            return type(error)
        finally:
            a.close()

    assert co.run(main()) in (BrokenPipeError, ConnectionResetError)


@needs_io_uring
def test_a_deadlock_is_an_error_and_an_unknown_request_a_type_error():
    import types

    co = loops.get("completions").coroutines

    async def lonely():
        await co.join(await co.spawn(co.Queue().get()))

    with pytest.raises(RuntimeError, match="deadlock"):
        co.run(lonely())

    @types.coroutine
    def foreign():
        yield "an asyncio future, say"

    with pytest.raises(TypeError, match="does not understand"):
        co.run(foreign())


# -- the buffer a cancelled operation lends the kernel ------------------------------------------


@needs_io_uring
def test_a_cancelled_recv_keeps_its_buffer_until_its_completion_arrives(monkeypatch):
    """The proactor's hazard: the kernel owns a recv's buffer until the recv's CQE, even after
    the task that asked was cancelled. Here the cancelled recv's completion is held back for
    several turns (as a slow cancellation would), while other recvs of the same size come and
    go: none may be handed that buffer, and the cancelled task ends only once the CQE came."""
    from loops.completions import buffers, kernel, uring

    co = loops.get("completions").coroutines
    held: dict[int, list] = {}  # user_data -> [turns left to hold, the CQE once seen]
    real_reap = uring.Ring.reap

    def slow_reap(ring):
        out = []
        for cqe in real_reap(ring):
            if cqe[0] in held:
                held[cqe[0]].append(cqe)
            else:
                out.append(cqe)
        for user_data, hold in list(held.items()):
            hold[0] -= 1
            if hold[0] <= 0 and len(hold) > 1:
                out.append(hold[1])
                del held[user_data]
        return out

    monkeypatch.setattr(uring.Ring, "reap", slow_reap)
    taken = []
    real_take = buffers.take

    def recording_take(size):
        buffer = real_take(size)
        taken.append(buffer)
        return buffer

    monkeypatch.setattr(buffers, "take", recording_take)
    size = 4096

    async def main():
        a, b = _pair()
        c, d = _pair()
        loop = kernel.running_loop()
        # Every receive goes through the ring, none tried with sock.recv first (api.recv):
        # the state a run of tries that found nothing leaves.
        loop.recv_skips_left = 10**9
        victim = await co.spawn(co.recv(a, size))
        await co.sleep(0.01)  # its RECV is in flight
        lent = loop._io.in_flight[victim.id].pinned
        assert lent.lent
        held[victim.id] = [10**9]  # the kernel's answer to the cancel is held back, until...
        canceller = await co.spawn(co.cancel(victim))
        others = []
        for i in range(10):  # meanwhile, recvs of the same size come and go
            # through the ring: each one is in flight before its bytes are sent
            other = await co.spawn(co.recv(c, size))
            await co.sleep(0)
            d.send(b"%d" % i)
            others.append(await co.join(other))
            assert victim.state == "operation" and lent.lent  # still the kernel's
        assert len(held[victim.id]) == 2  # the CQE came (-ECANCELED), and is held back
        held[victim.id][0] = 0  # ...now: the next turn delivers it
        await co.sleep(0.01)
        await co.join(canceller)  # the victim ends only after its CQE arrived
        assert victim.cancelled and not lent.lent
        for sock in (a, b, c, d):
            sock.close()
        return others, lent

    others, lent = co.run(main())
    assert others == [b"%d" % i for i in range(10)]
    assert len(taken) == 11  # the victim's buffer and one per other recv: all lent
    victims = [i for i, buffer in enumerate(taken) if buffer is lent]
    assert victims == [0], "the cancelled recv's buffer was lent again before its completion"


@needs_io_uring
def test_a_receive_is_tried_at_the_next_turn_and_skipped_after_tries_that_found_nothing(
    monkeypatch,
):
    """api.recv: a request that comes while the other tasks have their turn is taken by
    sock.recv at the receiving task's next turn, with no SQE; a try that finds nothing makes
    the next 1, 3, 7... receives go straight to the ring; a try that finds bytes makes every
    receive try again."""
    from loops.completions import kernel, proactor, uring

    co = loops.get("completions").coroutines
    submitted = []
    real_prepare_op = uring.Ring.prepare_op

    def counting_prepare_op(ring, opcode, *fields):
        if fields[-1] != proactor.WAKE_USER_DATA:  # the wake-up's RECV, always in flight
            submitted.append(opcode)
        return real_prepare_op(ring, opcode, *fields)

    monkeypatch.setattr(uring.Ring, "prepare_op", counting_prepare_op)

    async def ring_receives(a, b, payload):  # bytes that come only once the receive waits
        before = submitted.count(uring.OP_RECV)
        reader = await co.spawn(co.recv(a, 100))
        while not (reader.state == "operation" or submitted.count(uring.OP_RECV) > before):
            await co.sleep(0)  # the reader yields, then tries (or skips the try)
        b.send(payload)
        assert await co.join(reader) == payload
        return submitted.count(uring.OP_RECV) - before

    async def main():
        a, b = _pair()
        # The try at once skipped throughout: this is the try at the next turn alone.
        kernel.running_loop().recv_now_skips_left = 10**9
        with a, b:
            reader = await co.spawn(co.recv(a, 100))
            b.send(b"meanwhile")  # while the reader lets the others run
            assert await co.join(reader) == b"meanwhile"  # taken by the try
            assert submitted.count(uring.OP_RECV) == 0
            assert await ring_receives(a, b, b"1") == 1  # the try failed: _skips 1
            assert kernel.running_loop().recv_skips_left == 1
            assert await ring_receives(a, b, b"2") == 1  # skipped
            assert await ring_receives(a, b, b"3") == 1  # tried, failed again: _skips 3
            loop = kernel.running_loop()
            assert (loop.recv_skips, loop.recv_skips_left) == (3, 3)
            for _ in range(3):
                assert await ring_receives(a, b, b"x") == 1  # skipped
            b.send(b"waiting again")
            assert await co.recv(a, 100) == b"waiting again"  # tried: found bytes
            assert kernel.running_loop().recv_skips == 0
            assert submitted.count(uring.OP_RECV) == 6

    co.run(main())


@needs_io_uring
def test_a_receive_is_tried_at_once_while_such_tries_find_bytes():
    """api.recv: bytes already waiting are taken at once, before the other ready tasks run;
    tries at once that find nothing in a row make the next receives skip it (none after the
    first, then 1, 3, 7...: those yield and try at the next turn), and one that finds bytes
    makes every receive try at once again."""
    from loops.completions import kernel

    co = loops.get("completions").coroutines

    async def main():
        a, b = _pair()
        loop = kernel.running_loop()
        ran = []

        async def other():
            ran.append(True)

        async def taken_at_the_next_turn(payload):
            reader = await co.spawn(co.recv(a, 100))
            await co.sleep(0)  # the reader tries at once (or skips it), then yields
            state = (loop.recv_now_skips, loop.recv_now_skips_left)
            b.send(payload)
            assert await co.join(reader) == payload
            return state

        with a, b:
            b.send(b"waiting")
            await co.spawn(other())
            assert await co.recv(a, 100) == b"waiting"
            assert not ran  # taken at once: the turn was not given up
            assert await taken_at_the_next_turn(b"1") == (1, 0)  # failed: none skipped
            assert await taken_at_the_next_turn(b"2") == (3, 1)  # failed again: 1 skipped
            assert await taken_at_the_next_turn(b"3") == (3, 0)  # skipped
            assert await taken_at_the_next_turn(b"4") == (7, 3)  # failed again: 3 skipped
            for _ in range(3):
                b.send(b"x")
                assert await co.recv(a, 100) == b"x"  # skipped at once, taken at the next turn
            assert loop.recv_now_skips_left == 0
            b.send(b"waiting again")
            assert await co.recv(a, 100) == b"waiting again"  # tried at once: found bytes
            assert loop.recv_now_skips == 0
            assert ran

    co.run(main())


@needs_io_uring
def test_a_connection_that_always_has_data_cannot_starve_the_others(monkeypatch):
    """Receives tried at once do not give up the turn; after FAST_CALLS_PER_TURN of them in a
    row the next one yields, so a connection whose bytes are always waiting does not keep the
    other ready tasks waiting."""
    from loops.completions import api

    co = loops.get("completions").coroutines

    async def main():
        client, server = _pair()
        reads_before_the_other_ran = []

        async def other():
            reads_before_the_other_ran.append(reads)

        client.send(b"x" * 4096)  # every recv(server, 1) below finds a byte waiting
        await co.spawn(other())
        reads = 0
        with client, server:
            while not reads_before_the_other_ran:
                await co.recv(server, 1)
                reads += 1
        return reads_before_the_other_ran[0]

    assert co.run(main()) == api.FAST_CALLS_PER_TURN


@needs_io_uring
def test_data_a_cancelled_recv_won_the_race_with_goes_to_the_next_recv():
    from loops.completions import api, buffers

    co = loops.get("completions").coroutines

    async def main():
        a, b = _pair()
        buffer = buffers.take(16)
        ctypes_memmove(buffer.address, b"raced", 5)
        # The completion of a recv whose task was interrupted meanwhile: 5 bytes came.
        assert api._complete_recv(5, buffer, a, interrupted=True) is None
        assert not buffer.lent
        b.send(b" and more")
        first = await co.recv(a, 3)
        second = await co.recv(a, 100)
        third = await co.recv(a, 100)
        a.close()
        b.close()
        return first, second, third

    assert co.run(main()) == (b"rac", b"ed", b" and more")


@needs_io_uring
def test_a_connection_an_interrupted_accept_took_is_closed_with_its_closed_listener():
    """An ACCEPT that completes after its task was cancelled (a server stopped as a client
    connects) keeps the connection for the next accept; once the listener is closed nothing
    can take it, and the loop's close closes it rather than leave it open."""
    import ctypes

    from loops.completions import api, leftovers

    co = loops.get("completions").coroutines
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    client = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    name = ctypes.create_string_buffer(api.SOCKADDR_MAX + 4)  # as accept() lends it
    # The completion of an accept whose task was interrupted meanwhile: a connection came.
    assert api._complete_accept(accepted.detach(), name, listener, interrupted=True) is None
    kept = leftovers.kept[listener.fileno()][1][0][0]
    listener.close()

    async def main():
        return kept.fileno() != -1  # still open while the loop runs

    assert co.run(main())
    assert kept.fileno() == -1 and not leftovers.kept
    client.close()


def ctypes_memmove(address: int, data: bytes, n: int) -> None:
    import ctypes

    ctypes.memmove(address, data, n)


# -- addresses: what the kernel reads and writes as sockaddr -------------------------------------


@needs_io_uring
def test_addresses_cross_the_ring_in_every_family_it_speaks(tmp_path):
    co = loops.get("completions").coroutines

    async def main():
        seen = {}
        if socket.has_ipv6:
            u1 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            u2 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            with u1, u2:
                for u in (u1, u2):
                    u.bind(("::1", 0))
                    u.setblocking(False)
                await co.sendto(u1, b"six", u2.getsockname())
                data, sender = await co.recvfrom(u2, 100)
                seen["inet6"] = (data, sender == u1.getsockname())
        path = str(tmp_path / "listener.sock")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(path)
            listener.listen()
            listener.setblocking(False)
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.setblocking(False)
            accepting = await co.spawn(co.accept(listener))
            await co.connect(client, path)
            conn, address = await co.join(accepting)
            with client, conn:
                await co.sendall(client, b"unix")
                seen["unix"] = (await co.recv(conn, 100), address, conn.gettimeout())
        return seen

    seen = co.run(main())
    if socket.has_ipv6:
        assert seen["inet6"] == (b"six", True)
    assert seen["unix"] == (b"unix", "", 0.0)  # an unnamed peer, as Python reports it


@needs_io_uring
def test_more_operations_than_the_rings_hold_are_all_submitted_and_completed(monkeypatch):
    """SQEs beyond the SQ's slots are handed over early; those the kernel refuses (EBUSY, as a
    kernel with overflowing completions may) wait in order in a backlog, none overwritten."""
    import errno

    from loops.completions import uring

    ring = uring.Ring(2, 4)  # two SQ slots, four CQ slots: both overflow below
    real_enter, refusals = uring._enter, [5]

    def refusing_enter(*args):
        if refusals[0] > 0:
            refusals[0] -= 1
            return -1
        return real_enter(*args)

    monkeypatch.setattr(uring, "_enter", refusing_enter)
    monkeypatch.setattr(uring.ctypes, "get_errno", lambda: errno.EBUSY)
    try:
        for user_data in range(40):
            ring.prepare(uring.OP_NOP, user_data=user_data)
        assert len(ring._backlog) == 38  # the first two fill the ring, the kernel refuses
        got = []
        for _ in range(1000):
            if len(got) == 40:
                break
            ring.enter(0.01)
            got += [user_data for user_data, _ in ring.reap()]
        assert sorted(got) == list(range(40))
    finally:
        ring.close()


@needs_io_uring
def test_completions_that_overflow_the_cq_are_posted_by_a_submit_only_enter():
    """A CQ smaller than what is in flight: the kernel keeps the CQEs that found it full
    (IORING_FEAT_NODROP) and raises IORING_SQ_CQ_OVERFLOW; only an enter with GETEVENTS posts
    them. The loop calls enter(0) while tasks are ready, so enter(0) must post them, as
    liburing's io_uring_submit() does when cq_ring_needs_flush() says so: none is lost, and
    none waits for the next enter that blocks."""
    from loops.completions import uring

    ring = uring.Ring(4, 4)  # four CQ slots, and 16 NOPs below
    try:
        for batch in range(4):
            for i in range(4):
                ring.prepare(uring.OP_NOP, user_data=batch * 4 + i)
            ring.enter(0)  # submit only; NOPs complete at once, the CQ fills, then overflows
        assert ring._sq32[ring._sq_flags] & uring.SQ_CQ_OVERFLOW  # the kernel says so
        got = []
        for _ in range(16):  # each turn: a submit-only enter, then reaping, as stage 1 does
            ring.enter(0)
            got += [user_data for user_data, _ in ring.reap()]
        assert sorted(got) == list(range(16))
        assert not ring._sq32[ring._sq_flags] & uring.SQ_CQ_OVERFLOW
    finally:
        ring.close()


@needs_io_uring
def test_the_essence_cancels_a_recv_in_flight_and_frees_its_buffer_only_at_its_completion():
    """The essence's demo (python -m loops.completions.essence): at the cancel the victim's
    buffer is still lent to the kernel; its RECV's own CQE (-ECANCELED) comes after the
    ASYNC_CANCEL was submitted, and only that frees it."""
    done = subprocess.run(
        [sys.executable, "-m", "loops.completions.essence"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    lent = lines.index("main: cancel the victim's RECV; its buffer still lent: True")
    cancel_submitted = lines.index("io_uring_enter: submit 1, wait True", lent)
    freed = next(i for i, line in enumerate(lines) if line.startswith("CQE for recv: res -125"))
    assert lent < cancel_submitted < freed


@needs_io_uring
def test_a_ctrl_c_between_an_enter_and_its_count_leaves_the_ring_counted_right():
    """A KeyboardInterrupt lands after any line: here right after the enter that handed Linux
    a task's RECV, before ``pending -= taken``. Ring.recount takes the count again from the
    ring, so close() waits for that RECV's cancellation (instead of asking Linux, enter after
    enter, to take an SQE that is not there, which returns at once until SHUTDOWN_GRACE ends),
    and the next run waits as it should."""
    from loops.completions import kernel, uring

    co = loops.get("completions").coroutines
    lines = [
        i
        for i, line in enumerate(Path(uring.__file__).read_text().splitlines(), 1)
        if "taken = _enter(" in line
    ]
    (after_enter,) = [n + 1 for n in lines]
    shot = []

    def tracer(frame, event, arg):
        if frame.f_code is uring.Ring.enter.__code__:

            def line(frame, event, arg):
                # Taken > 0: Linux took SQEs, and the count has not been told.
                at = event == "line" and frame.f_lineno == after_enter
                if at and not shot and frame.f_locals["taken"] > 0:
                    shot.append(frame.f_locals["taken"])
                    raise KeyboardInterrupt
                return line

            return line
        return None

    async def main(a, b):
        async def later():  # a byte for the RECV once it is in flight: the enter returns
            await co.sleep(0.05)
            b.send(b"x")

        await co.spawn(later())
        return await co.recv(a, 1)

    a, b = _pair()
    loop = kernel.Loop()
    with a, b:
        sys.settrace(tracer)
        try:
            with pytest.raises(KeyboardInterrupt):
                loop.run(main(a, b))
        finally:
            sys.settrace(None)
        assert shot, "the interrupt never landed after an enter that handed Linux an SQE"
        assert loop._io.ring.pending == 0  # recounted: Linux took them all
        loop.close()
        assert not loop._io.in_flight  # the RECV's cancellation came back before the grace
