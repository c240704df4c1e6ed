"""completions, the idea alone: a task awaits an *operation* (recv into this buffer); one SQE
per operation, one ``io_uring_enter`` submits them all, each CQE resumes the task it names.
``uring.py``, ``kernel.py``, ``tasks.py``: the full loop (README.md says what they add)."""

import ctypes
import mmap
import socket
import struct
import types
from collections import deque

libc = ctypes.CDLL(None, use_errno=True)
OP_SEND, OP_RECV, ENTER_GETEVENTS = 26, 27, 1
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
        self.u32, self.pending = memoryview(self.rings).cast("I"), 0

    def prepare(self, opcode, fd, addr, length, user_data):  # one SQE, published
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
        at = self.cq[5] * 4  # where the CQEs start
        done = [CQE.unpack_from(self.rings, at + (i & mask) * 16) for i in range(head, tail)]
        self.u32[self.cq[0]] = tail
        return done


@types.coroutine
def _request(*request):
    return (yield request)


async def recv(sock, n):
    buffer = ctypes.create_string_buffer(n)  # the kernel's until the completion comes
    res = await _request("operation", OP_RECV, sock, ctypes.addressof(buffer), n, buffer)
    return buffer.raw[:res]


async def sendall(sock, data):  # one SEND (the full loop sends again what was not taken)
    address = ctypes.cast(data, ctypes.c_void_p).value  # bytes: a fixed address
    return await _request("operation", OP_SEND, sock, address, len(data), data)


class Task:
    def __init__(self, coro):
        self.coro, self.id, self.value, self.pinned, self.done = coro, id(coro), None, None, False


class Loop:
    def run(self, coro, *others):  # others: tasks started beside main (the full loop: spawn)
        self._ring, self._ready, self._in_flight = Ring(), deque(), {}  # user_data -> task
        self._ready.extend([main := Task(coro), *map(Task, others)])
        while not main.done:
            # Stage 1: submit every queued operation; wait for a completion if nothing is ready.
            self._ring.enter(wait=not self._ready)
            for user_data, res in self._ring.reap():  # each CQE resumes the task it names
                task = self._in_flight.pop(user_data)
                task.value, task.pinned = res, None  # the buffer is ours again
                self._ready.append(task)
            # Stage 3: run the ready tasks; each runs until it awaits an operation.
            for _ in range(len(self._ready)):
                task = self._ready.popleft()
                try:
                    request = task.coro.send(task.value)
                except StopIteration as stop:
                    task.done, task.value = True, stop.value
                    continue
                _, opcode, sock, addr, length, task.pinned = request  # pinned: kept alive
                self._ring.prepare(opcode, sock.fileno(), addr, length, task.id)
                self._in_flight[task.id] = task
        return main.value


if __name__ == "__main__":

    async def main(sock):
        data = await recv(sock, 100)  # submitted before any byte exists: the kernel waits
        print(f"recv completed with {data!r}")
        return data

    a, b = socket.socketpair()  # main's RECV and the other task's SEND go in one enter
    print(f"main returned {Loop().run(main(a), sendall(b, b'ping'))!r}")
