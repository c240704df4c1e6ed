"""Results of operations that completed after their task was cancelled, kept for the next call.

The rare path, fenced here: the completion won the race with ``IORING_OP_ASYNC_CANCEL``. A
readiness loop never has them: a cancelled reader had not read yet, so the bytes stayed in the
socket. Here Linux already took them out, so they are kept, per socket, for the next call of
the same kind (recv, recvfrom, accept), which returns them before submitting anything.
"""

from __future__ import annotations

import collections
import socket
import weakref
from typing import Any

# fd -> (socket, results). Keyed by fd with a weak reference, so a socket reusing a closed
# socket's number starts clean; empty (one dict truth test per call) in every run that cancels
# no operation at the wrong moment. A socket's, not a loop's: a socket outlives the run() that
# interrupted its receive, and its bytes go to the next receive whichever loop makes it.
kept: dict[int, tuple[weakref.ref, collections.deque]] = {}


def keep(sock: Any, result: Any, first: bool = False) -> None:
    """Keep result for the next call on sock (before what is kept already, if first)."""
    entry = kept.get(sock.fileno())
    if entry is None or entry[0]() is not sock:
        entry = kept[sock.fileno()] = (weakref.ref(sock), collections.deque())
    if first:
        entry[1].appendleft(result)
    else:
        entry[1].append(result)


def take(sock: Any) -> Any:
    """The oldest result kept for sock, or None."""
    fd = sock.fileno()
    entry = kept.get(fd)
    if entry is None:
        return None
    if entry[0]() is not sock:  # a closed socket's, its number reused: not ours
        del kept[fd]
        return None
    result = entry[1].popleft()
    if not entry[1]:
        del kept[fd]
    return result


def close_orphaned() -> None:
    """Drop what is kept for sockets that have been closed since, closing the connections
    kept for the next accept on a closed listener: nothing can take them any more (Linux
    resets the connections left in a closed listener's backlog likewise). ``Proactor.close``
    calls it as a loop closes, so a connection an interrupted ACCEPT took (a cancel that came
    as a connection arrived: a server stopped just then) is not left open."""
    for fd, (ref, results) in list(kept.items()):
        sock = ref()
        if sock is not None and sock.fileno() != -1:
            continue  # still open: a later call may take them
        del kept[fd]
        for result in results:
            if type(result) is tuple and isinstance(result[0], socket.socket):
                result[0].close()
