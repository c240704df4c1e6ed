"""completions, the idea alone: a task awaits an *operation*, one ``io_uring_enter`` submits every
SQE, and each CQE resumes the task it names (the full loop: uring.py, kernel.py, api.py)."""

import ctypes
import mmap
import socket
import struct
import types
from collections import deque

libc, OP_ASYNC_CANCEL, OP_RECV, ENTER_GETEVENTS = ctypes.CDLL(None), 14, 27, 1
# An SQE (64 bytes): opcode, fd, off, addr, len, op flags, user_data. A CQE: user_data, res.
SQE, CQE = struct.Struct("<B3xiQQIIQ24x"), struct.Struct("<Qi")


class Ring:
    def __init__(self, entries=64):
        p = (ctypes.c_uint32 * 30)()  # io_uring_params: 10 u32, then the SQ's and CQ's offsets
        self.fd = libc.syscall(425, entries, p)  # io_uring_setup: the ring's fd, p filled in
        self.sq, self.cq = [o // 4 for o in p[10:20]], [o // 4 for o in p[20:30]]  # u32 indices
        size = max(p[16] + p[0] * 4, p[25] + p[1] * 16)  # SQ index array, CQE array: the ends
        self.rings = mmap.mmap(self.fd, size, offset=0)  # both rings in one map (5.4+)
        self.sqes = mmap.mmap(self.fd, p[0] * 64, offset=0x10000000)
        self.u32, self.pending, self.at = memoryview(self.rings).cast("I"), 0, p[25]  # at: CQEs

    def prepare(self, opcode, *, user_data, fd=-1, addr=0, length=0):  # one SQE, published
        tail, mask = self.u32[self.sq[1]], self.u32[self.sq[2]]
        SQE.pack_into(self.sqes, (tail & mask) * 64, opcode, fd, 0, addr, length, 0, user_data)
        self.u32[self.sq[6] + (tail & mask)] = tail & mask  # the SQ ring: indices of SQEs
        self.u32[self.sq[1]], self.pending = tail + 1, self.pending + 1  # x86-64: in order

    def enter(self, wait):  # one syscall: submit what is queued, maybe wait for a completion
        print(f"io_uring_enter: submit {self.pending}, wait {wait}")
        libc.syscall(426, self.fd, self.pending, int(wait), ENTER_GETEVENTS, None, 0)
        self.pending = 0

    def reap(self):  # the completions are in our memory: no syscall
        head, tail, mask = self.u32[self.cq[0]], self.u32[self.cq[1]], self.u32[self.cq[2]]
        done = [CQE.unpack_from(self.rings, self.at + (i & mask) * 16) for i in range(head, tail)]
        self.u32[self.cq[0]] = tail
        return done


@types.coroutine
def _trap(*request):
    return (yield request)


async def recv(sock, n):
    buffer = ctypes.create_string_buffer(n)  # Linux's until the completion comes
    res = await _trap("operation", OP_RECV, sock.fileno(), ctypes.addressof(buffer), n, buffer)
    if res < 0:  # -errno (the full loop turns the -ECANCELED of a cancel into CancelledError)
        raise OSError(-res, "recv")
    return buffer.raw[:res]


class Task:
    def __init__(self, coro):
        self.coro, self.id, self.value, self.pinned = coro, id(coro), None, None


class Loop:
    def run(self, main, *others):  # others: tasks started beside main (the full loop: spawn)
        self._ring, self._ready, self._in_flight = Ring(), deque([main, *others]), {}
        while main.coro.cr_frame is not None:  # until main has returned
            # Stage 1: submit every queued operation; wait for a completion if nothing is ready.
            self._ring.enter(wait=not self._ready)
            for user_data, res in self._ring.reap():  # each CQE resumes the task it names
                task = self._in_flight.pop(user_data)
                task.value, task.pinned = res, None  # Linux is done with it: ours again
                print(f"CQE for {task.coro.__name__}: res {res}; what it lent is free again")
                self._ready.append(task)
            # Stage 2: expire timers (this essence has none; the full loop keeps a heap).
            # Stage 3: run the ready tasks; each runs until it awaits an operation.
            for _ in range(len(self._ready)):
                task = self._ready.popleft()
                try:
                    request = task.coro.send(task.value)
                except (StopIteration, OSError) as end:  # returned, or raised (ECANCELED)
                    task.value = getattr(end, "value", end)
                    continue
                _, opcode, fd, addr, length, task.pinned = request  # pinned: kept alive
                self._ring.prepare(opcode, fd=fd, addr=addr, length=length, user_data=task.id)
                self._in_flight[task.id] = task
        return main.value


if __name__ == "__main__":

    async def main(sock, victim):  # victim: a recv task on a socket nobody writes to
        data = await recv(sock, 100)  # its RECV and the victim's go in one enter
        print(f"main: cancel the victim's RECV; its buffer still lent: {victim.pinned is not None}")
        await _trap("operation", OP_ASYNC_CANCEL, -1, victim.id, 0, None)  # addr: what to cancel
        return data

    (a, b), (c, _) = socket.socketpair(), socket.socketpair()
    b.send(b"ping")
    print(f"main returned {Loop().run(Task(main(a, victim := Task(recv(c, 100)))), victim)!r}")
