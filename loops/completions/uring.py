"""The ring: io_uring from the standard library (ctypes for two syscalls, mmap for the rings).

io_uring is two queues in memory shared with Linux. The *submission queue* (SQ) is an
array of 64-byte entries (SQEs), each describing one operation (recv into this buffer from
this fd, send these bytes, accept, cancel that other operation...), and a ring of indices
into it; the program writes entries and moves the ring's tail. The *completion queue* (CQ) is
a ring of 16-byte entries (CQEs), each ``(user_data, res, flags)``; Linux writes them and
moves its tail, the program reads them and moves its head. One syscall, ``io_uring_enter``,
tells Linux how many new entries to consume and, optionally, waits until at least one
completion is there (or a timeout passes). Reading completions needs no syscall at all: they
are in our memory. x86-64 Linux only: why, beside ``SYS_IO_URING_SETUP``.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import struct

# ``io_uring_setup(2)`` returns a file descriptor and the offsets of the ring fields; three
# ``mmap`` calls on that fd (``IORING_OFF_SQ_RING``, ``IORING_OFF_CQ_RING``, ``IORING_OFF_SQES``;
# one for both rings where Linux has ``IORING_FEAT_SINGLE_MMAP``) map them into the
# process. The layouts below are ``include/uapi/linux/io_uring.h``'s. The syscall numbers are
# the same on most architectures, but writing an SQE and then the tail with plain stores relies
# on x86-64's store ordering (total store order), where Linux's ``smp_load_acquire`` of the
# tail sees the entry; on a weakly ordered CPU (arm64) a release barrier would be needed, which
# Python cannot issue.
SYS_IO_URING_SETUP = 425
SYS_IO_URING_ENTER = 426

# Opcodes (enum io_uring_op), only those the loop uses.
OP_NOP = 0
OP_SENDMSG = 9
OP_RECVMSG = 10
OP_ACCEPT = 13
OP_ASYNC_CANCEL = 14
OP_CONNECT = 16
OP_READ = 22
OP_SEND = 26
OP_RECV = 27

ENTER_GETEVENTS = 1 << 0
ENTER_EXT_ARG = 1 << 3  # the enter's last arguments are an io_uring_getevents_arg (a timeout)
FEAT_SINGLE_MMAP = 1 << 0
FEAT_EXT_ARG = 1 << 8
SETUP_CQSIZE = 1 << 3
SETUP_TASKRUN_FLAG = 1 << 9  # Linux flags SQ_TASKRUN when completions wait to be posted
SETUP_SINGLE_ISSUER = 1 << 12  # one thread submits (the loop's): required by DEFER_TASKRUN
SETUP_DEFER_TASKRUN = 1 << 13  # completions are posted only inside our io_uring_enter
SQ_CQ_OVERFLOW = 1 << 1  # in the SQ ring's flags: CQEs that found the CQ full wait in Linux
SQ_TASKRUN = 1 << 2  # in the SQ ring's flags: deferred work waits for an enter
# Either flag means completions wait to be posted into the CQ, which only an enter with
# GETEVENTS does: liburing's cq_ring_needs_flush() (src/queue.c) tests these two bits, and its
# io_uring_submit() and io_uring_peek_batch_cqe() enter Linux when it says so.
CQ_NEEDS_FLUSH = SQ_CQ_OVERFLOW | SQ_TASKRUN
CANCEL_ANY = 1 << 2  # ASYNC_CANCEL: every request, whatever its user_data
OFF_SQ_RING = 0
OFF_CQ_RING = 0x8000000
OFF_SQES = 0x10000000

SQE = struct.Struct("<BBHiQQIIQHHiQQ")  # one submission entry, 64 bytes
# Its first 40 bytes, up to user_data: the only fields this ring ever sets (see Ring.prepare_op).
SQE_HEAD = struct.Struct("<BBHiQQIIQ")
CQE = struct.Struct("<Qi4x")  # user_data, res, and flags (unused here, skipped)
CQE_SIZE = 16
GETEVENTS_ARG = struct.Struct("<QIIQ")  # sigmask, sigmask_sz, min_wait_usec, ts (a pointer)
TIMESPEC = struct.Struct("<qq")
# The enter's last argument, the size of its arg, as 8-byte values (see _enter).
_ARG_SIZE, _NO_ARG_SIZE = ctypes.c_long(GETEVENTS_ARG.size), ctypes.c_long(0)


class _SQOffsets(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint32)
        for name in ("head", "tail", "ring_mask", "ring_entries", "flags", "dropped", "array")
    ] + [("resv1", ctypes.c_uint32), ("user_addr", ctypes.c_uint64)]


class _CQOffsets(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint32)
        for name in ("head", "tail", "ring_mask", "ring_entries", "overflow", "cqes", "flags")
    ] + [("resv1", ctypes.c_uint32), ("user_addr", ctypes.c_uint64)]


class Params(ctypes.Structure):
    """struct io_uring_params: what we ask for, and where Linux put the ring fields."""

    _fields_ = [
        ("sq_entries", ctypes.c_uint32),
        ("cq_entries", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("sq_thread_cpu", ctypes.c_uint32),
        ("sq_thread_idle", ctypes.c_uint32),
        ("features", ctypes.c_uint32),
        ("wq_fd", ctypes.c_uint32),
        ("resv", ctypes.c_uint32 * 3),
        ("sq_off", _SQOffsets),
        ("cq_off", _CQOffsets),
    ]


_libc = ctypes.CDLL(None, use_errno=True)  # releases the GIL around each call
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
# Speed trick, fenced here: io_uring_enter runs once per turn of the loop, so it gets its own
# handle on syscall(2), called with plain Python ints and a ready-made c_void_p and no declared
# argtypes. Declared argtypes have ctypes convert each argument through its type's from_param;
# plain ints go straight in as C ints, which libffi widens (sign-extends) into the 64-bit
# registers the syscall reads, and every int given here (syscall number, fd, counts, flags)
# is far below 2**31. The seventh argument goes on the stack, where a C int fills only half
# of the 8-byte slot the syscall reads: it is a ready-made c_long (_ARG_SIZE, _NO_ARG_SIZE).
# What it saves per request is in loops/completions/README.md ("Levers", the enter without
# argtypes).
_enter = _libc["syscall"]  # a second handle on syscall(2), for the enter alone
_enter.restype = ctypes.c_long


def setup(entries: int, params: Params) -> int:
    """io_uring_setup(2): a new ring's fd, or OSError (ENOSYS, EPERM, ENOMEM...)."""
    if platform.system() != "Linux":
        raise OSError(errno.ENOSYS, f"io_uring is Linux only (this is {platform.system()})")
    if platform.machine() != "x86_64":
        raise OSError(
            errno.ENOSYS,
            f"this ring is written for x86-64 (this is "
            f"{platform.machine()}; see loops/completions/uring.py)",
        )
    fd = _syscall(ctypes.c_long(SYS_IO_URING_SETUP), ctypes.c_long(entries), ctypes.byref(params))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"io_uring_setup: {os.strerror(code)}")
    return fd


def probe() -> None:
    """Set up a tiny ring and close it at once: OSError says why io_uring is unusable here.

    ``LAB_COMPLETIONS_UNAVAILABLE`` (any non-empty text) makes the probe fail on purpose, as a
    machine without io_uring would: the lab's tests use it to check the unavailable path.
    """
    forced = os.environ.get("LAB_COMPLETIONS_UNAVAILABLE")
    if forced:
        raise OSError(errno.ENOSYS, f"forced by LAB_COMPLETIONS_UNAVAILABLE={forced!r}")
    os.close(setup(2, Params()))


def why(error: OSError) -> str:
    """One line on why io_uring_setup failed, with the usual cause of that errno."""
    reason = error.strerror or str(error)
    if error.errno == errno.EPERM:
        try:
            with open("/proc/sys/kernel/io_uring_disabled") as setting:
                disabled = setting.read().strip()
        except OSError:
            disabled = "0"
        if disabled != "0":
            return f"{reason} (sysctl kernel.io_uring_disabled = {disabled})"
        return f"{reason} (a seccomp filter, such as a container runtime's default?)"
    if error.errno == errno.ENOSYS and "io_uring_setup" in reason:
        return f"{reason} (Linux before 5.1, or built without CONFIG_IO_URING)"
    return reason


class Ring:
    """One io_uring: queue SQEs with :meth:`prepare`, submit and wait with :meth:`enter`,
    read completions with :meth:`reap`."""

    def __init__(self, entries: int = 4096, cq_entries: int = 16384) -> None:
        # DEFER_TASKRUN: Linux finishes operations (copies the bytes of a send that
        # waited for room, posts the CQE) only when this thread calls io_uring_enter, never in
        # the middle of some other syscall of the program. So completions happen at one
        # known point of the loop's turn (stage 1), in batches, and a program's own socket
        # calls between two turns see the sockets as the readiness loops leave them.
        # Linux before 6.1 refuse the flags: the ring then runs without them.
        for flags in (SETUP_DEFER_TASKRUN | SETUP_SINGLE_ISSUER | SETUP_TASKRUN_FLAG, 0):
            params = Params()
            params.flags = SETUP_CQSIZE | flags
            params.cq_entries = cq_entries
            try:
                self.fd = setup(entries, params)
                break
            except OSError as error:
                if error.errno != errno.EINVAL or not flags:
                    raise
        self.flags = params.flags
        try:
            self._map(params)
        except BaseException:
            os.close(self.fd)
            raise
        self.features = params.features
        if not self.features & FEAT_EXT_ARG:  # 5.11+: the enter's timeout argument
            self.close()
            raise OSError(errno.ENOSYS, "io_uring without IORING_FEAT_EXT_ARG (Linux < 5.11)")
        self.pending = 0  # SQEs written and not yet handed to Linux
        self._backlog: list[tuple] = []  # SQEs that found the ring full, in order
        # The enter's two getevents_args, written once: one pointing at a timespec that each
        # enter with a timeout rewrites, one with a null timespec pointer (wait forever). So a
        # waiting enter packs at most the timespec.
        self._timespec = ctypes.create_string_buffer(TIMESPEC.size)
        self._timed_arg = ctypes.create_string_buffer(GETEVENTS_ARG.size)
        GETEVENTS_ARG.pack_into(self._timed_arg, 0, 0, 0, 0, ctypes.addressof(self._timespec))
        self._forever_arg = ctypes.create_string_buffer(GETEVENTS_ARG.size)  # all zero
        # As _enter takes them (see _enter): ready-made c_void_p.
        self._timed = ctypes.c_void_p(ctypes.addressof(self._timed_arg))
        self._forever = ctypes.c_void_p(ctypes.addressof(self._forever_arg))

    def _map(self, p: Params) -> None:
        sq, cq = p.sq_off, p.cq_off
        sq_size = sq.array + p.sq_entries * 4
        cq_size = cq.cqes + p.cq_entries * CQE_SIZE
        flags, prot = (
            mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
            mmap.PROT_READ | (mmap.PROT_WRITE),
        )
        if p.features & FEAT_SINGLE_MMAP:
            sq_size = cq_size = max(sq_size, cq_size)
        self._sq_map = mmap.mmap(self.fd, sq_size, flags, prot, offset=OFF_SQ_RING)
        if p.features & FEAT_SINGLE_MMAP:
            self._cq_map = self._sq_map
        else:
            self._cq_map = mmap.mmap(self.fd, cq_size, flags, prot, offset=OFF_CQ_RING)
        self._sqe_map = mmap.mmap(self.fd, p.sq_entries * SQE.size, flags, prot, offset=OFF_SQES)
        # The ring fields as u32 arrays: an index is a byte offset // 4.
        self._sq32 = memoryview(self._sq_map).cast("I")
        self._cq32 = memoryview(self._cq_map).cast("I")
        self._cq_bytes = memoryview(self._cq_map)  # reap() unpacks CQEs from slices of it
        self.sq_entries = p.sq_entries
        self.cq_entries = p.cq_entries
        self._sq_mask = self._sq32[sq.ring_mask // 4]
        self._cq_mask = self._cq32[cq.ring_mask // 4]
        self._sq_head = sq.head // 4
        self._sq_tail = sq.tail // 4
        self._sq_flags = sq.flags // 4
        self._cq_head = cq.head // 4
        self._cq_tail = cq.tail // 4
        self._cqes = cq.cqes
        self._tail = self._sq32[self._sq_tail]  # our copy of the SQ tail (we alone move it)
        # The SQ ring holds indices into the SQE array. Entry i always goes to slot i, so the
        # index array is written once here and never again: a submission is an SQE and a tail.
        array = sq.array // 4
        for i in range(p.sq_entries):
            self._sq32[array + i] = i

    def recount(self) -> None:
        """Count again the SQEs Linux has not taken, from the ring itself. A signal's
        KeyboardInterrupt lands after any line, so between an enter's return and its
        ``pending -= taken`` too; a count left too high makes every later enter ask Linux to
        take SQEs that are not there, and Linux then returns at once instead of waiting."""
        self.pending = (self._tail - self._sq32[self._sq_head]) % (1 << 32)

    @property
    def space(self) -> int:
        """SQ slots free to write now."""
        return self.sq_entries - (self._tail - self._sq32[self._sq_head]) % (1 << 32)

    def prepare(
        self,
        opcode: int,
        *,
        user_data: int,
        fd: int = -1,
        addr: int = 0,
        length: int = 0,
        off: int = 0,
        op_flags: int = 0,
    ) -> None:
        """Write one SQE and publish it (Linux takes it at the next enter).

        The keywords are the SQE's fields of those names (``length`` is its ``len``,
        ``op_flags`` the opcode's own flags, such as ``MSG_NOSIGNAL`` for SEND); the SQE's
        other fields stay 0."""
        self.prepare_op(opcode, fd, addr, length, off, op_flags, user_data)

    def prepare_op(
        self, opcode: int, fd: int, addr: int, length: int, off: int, op_flags: int, user_data: int
    ) -> None:
        """:meth:`prepare` with every field given in order: Linux's call, once per operation.

        Speed trick, fenced here (loops/completions/README.md, "Levers", direct SQE writes):
        positional arguments, and only the SQE's first 40 bytes packed (``SQE_HEAD``: opcode,
        flags, ioprio, fd, off, addr, len, op_flags, user_data). The other 24 (buf_index,
        personality, splice_fd_in, addr3) are 0 in every SQE this ring writes: the mapping
        starts zeroed, Linux never writes into the SQE array, and no caller sets them, so each
        slot's tail is still 0 when it is reused."""
        if self._backlog or self.pending >= self.sq_entries:
            self._push((opcode, fd, addr, length, off, op_flags, user_data))
            return
        tail = self._tail
        SQE_HEAD.pack_into(
            self._sqe_map,
            (tail & self._sq_mask) << 6,  # 64-byte entries
            opcode,
            0,
            0,
            fd,
            off,
            addr,
            length,
            op_flags,
            user_data,
        )
        self._tail = tail = (tail + 1) & 0xFFFFFFFF
        self._sq32[self._sq_tail] = tail  # after the entry: x86-64 keeps the stores in order
        self.pending += 1

    def _push(self, fields: tuple) -> None:
        """The slow path of :meth:`prepare_op`: an SQE that finds the ring full, or others
        already waiting for room (``_backlog``), in order."""
        if self._backlog:  # behind those already waiting: Linux sees them in order
            self._backlog.append(fields)
            return
        if self.pending >= self.sq_entries:  # every slot holds an SQE Linux has not taken
            self.enter(0)  # hand them over to make room
            if self.pending >= self.sq_entries:  # refused (EBUSY: completions overflowing)
                self._backlog.append(fields)
                return  # written by enter() once Linux has taken some
        self.prepare_op(*fields)

    def enter(self, wait: float | None) -> int:
        """Submit what is queued; with wait (seconds) or None (forever), also wait for one
        completion. 0 means: submit only, and have Linux post the completions waiting to
        be posted, if any (``CQ_NEEDS_FLUSH``). Returns how many SQEs Linux took."""
        submit, flags, arg, argsz = self.pending, 0, None, _NO_ARG_SIZE
        if wait is None:  # a null timespec pointer: no timeout
            flags, arg, argsz = ENTER_GETEVENTS | ENTER_EXT_ARG, self._forever, _ARG_SIZE
        elif wait != 0:
            flags, arg, argsz = ENTER_GETEVENTS | ENTER_EXT_ARG, self._timed, _ARG_SIZE
            seconds = int(wait)
            TIMESPEC.pack_into(self._timespec, 0, seconds, int((wait - seconds) * 1e9))
        elif self._sq32[self._sq_flags] & CQ_NEEDS_FLUSH:
            # Completions wait to be posted: deferred work (DEFER_TASKRUN), or CQEs that
            # overflowed a full CQ, which would otherwise wait for the next enter that waits.
            flags = ENTER_GETEVENTS
        elif not submit:
            return 0  # nothing to hand over, nothing to collect: no syscall
        taken = _enter(SYS_IO_URING_ENTER, self.fd, submit, int(wait != 0), flags, arg, argsz)
        if taken < 0:
            code = ctypes.get_errno()
            if code in (errno.ETIME, errno.EINTR, errno.EAGAIN, errno.EBUSY):
                # A timeout or a signal (Python raises KeyboardInterrupt once we return to
                # bytecode); EAGAIN/EBUSY: the CQ is full, reaping makes room.
                return 0
            raise OSError(code, f"io_uring_enter: {os.strerror(code)}")
        self.pending -= taken
        if self._backlog:  # SQEs that found the ring full: into the room just made
            backlog, self._backlog = self._backlog, []
            for fields in backlog:
                self._push(fields)  # a full ring again puts the rest back in the backlog
        return taken

    def reap(self) -> list[tuple[int, int]]:
        """Every completion Linux has posted: [(user_data, res), ...]. No syscall.

        Speed trick, fenced here (loops/completions/README.md, "Levers", batched reaping): the
        CQEs between head and tail lie in at most two runs of the ring (two where they wrap),
        and ``CQE.iter_unpack`` turns a run into tuples in one C call, instead of one
        ``unpack_from`` and one index step in Python per CQE. A lone CQE, the usual case at a
        light load (a turn per request), is read with ``unpack_from`` alone: no slice, no
        iterator (loops/completions/README.md, "Levers", the lone CQE)."""
        cq32 = self._cq32
        head = cq32[self._cq_head]
        tail = cq32[self._cq_tail]
        if head == tail:
            return []
        first = head & self._cq_mask
        count = (tail - head) & 0xFFFFFFFF
        if count == 1:  # the usual case at a light load: no slice, no iterator
            done = [CQE.unpack_from(self._cq_map, self._cqes + first * CQE_SIZE)]
            cq32[self._cq_head] = tail  # read first: from here on the slot is Linux's
            return done
        entries = self._cq_mask + 1
        end = first + count  # may run past the ring's end: it wraps
        base, view, unpack = self._cqes, self._cq_bytes, CQE.iter_unpack
        done = list(unpack(view[base + first * CQE_SIZE : base + min(end, entries) * CQE_SIZE]))
        if end > entries:
            done += unpack(view[base : base + (end - entries) * CQE_SIZE])
        cq32[self._cq_head] = tail  # the slots are Linux's again
        return done

    def close(self) -> None:
        """Unmap the rings and close the fd (the caller made sure nothing is in flight)."""
        if self.fd < 0:
            return
        self._sq32.release()
        self._cq32.release()
        self._cq_bytes.release()
        for region in {id(m): m for m in (self._sq_map, self._cq_map, self._sqe_map)}.values():
            region.close()
        os.close(self.fd)
        self.fd = -1
