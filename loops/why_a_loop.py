"""Step 0: why an event loop exists, shown with three echo servers and two clients.

Run it (a few seconds)::

    python -m loops.why_a_loop

Each server echoes what a client sends, on real loopback sockets, to two real client threads:
client A connects, gets its echo, then keeps its connection open a while (a person typing);
client B connects a moment later and wants its echo at once.

1. **Blocking** (`serve_blocking`): a socket call waits until it can finish, so the server
   sits in ``recv()`` on A's socket and B, though the kernel has already accepted its
   connection, gets nothing until A leaves. One client at a time; a thread per client is the
   usual way out, and costs a thread (a stack, a switch by the kernel) per connection.
2. **Non-blocking, busy** (`serve_busy`): ``sock.setblocking(False)`` makes every call return
   at once; a call that cannot finish now raises ``BlockingIOError`` instead of waiting. Now
   one thread serves both clients by trying every socket in turn, but it never waits, so it
   tries again and again while nothing happens: the ``BlockingIOError`` count and a core's
   worth of CPU (``time.process_time``) are the price.
3. **Readiness** (`serve_selectors`): ``selectors`` (epoll here) asks the kernel which sockets
   are *readable* (a recv would find data, or a new connection waits to be accepted) and
   *sleeps* until one is. Both clients served, no failed call, almost no CPU.

The third is the heart of every loop in ``loops/``: wait for readiness, then run the code
that was waiting for it. Everything after this step (timers, a ready queue, tasks) is built
around that wait; ``loops/README.md`` goes on from here.
"""

import selectors
import socket
import threading
import time

HOLD = 0.4  # seconds client A keeps its connection open after its echo
LATE = 0.05  # seconds after A that client B connects


def serve_blocking(listener, cost):
    """One client at a time: accept, then echo until that client closes."""
    for _ in range(2):
        conn, _address = listener.accept()  # waits for a connection
        with conn:
            while data := conn.recv(1024):  # waits for this client's bytes, nobody else's
                conn.sendall(data)


def serve_busy(listener, cost):
    """Every socket non-blocking, tried in turn, forever: nothing waits, so nothing sleeps."""
    listener.setblocking(False)
    conns, closed = [], 0
    while closed < 2:
        try:
            conn, _address = listener.accept()
            conn.setblocking(False)
            conns.append(conn)
        except BlockingIOError:  # nobody is connecting right now: try again at once
            cost["BlockingIOError"] += 1
        for conn in list(conns):
            try:
                data = conn.recv(1024)
            except BlockingIOError:  # nothing to read yet: try again at once
                cost["BlockingIOError"] += 1
                continue
            if data:
                conn.sendall(data)  # (a short echo fits the send buffer)
            else:  # the client closed
                conns.remove(conn)
                conn.close()
                closed += 1


def serve_selectors(listener, cost):
    """Sleep in select() until a socket is readable, then do what that socket needs."""
    selector = selectors.DefaultSelector()
    listener.setblocking(False)
    selector.register(listener, selectors.EVENT_READ)
    closed = 0
    while closed < 2:
        cost["select() calls"] += 1
        for key, _events in selector.select():  # sleeps until the kernel says "readable"
            if key.fileobj is listener:
                conn, _address = listener.accept()  # cannot fail: a connection is waiting
                conn.setblocking(False)
                selector.register(conn, selectors.EVENT_READ)
            elif data := key.fileobj.recv(1024):  # cannot fail: bytes are waiting
                key.fileobj.sendall(data)
            else:
                selector.unregister(key.fileobj)
                key.fileobj.close()
                closed += 1
    selector.close()


def client(name, address, delay, hold, events, start):
    """Connect after `delay`, send a ping, wait for the echo, keep the connection `hold` s."""
    time.sleep(delay)
    with socket.create_connection(address) as sock:
        sock.sendall(b"ping")
        sock.recv(1024)
        events.append((time.monotonic() - start, f"{name} echoed"))
        time.sleep(hold)
        events.append((time.monotonic() - start, f"{name} closed"))


def run(server):
    """Serve clients A and B with `server`; what happened, in order, and what it cost."""
    cost = {"BlockingIOError": 0, "select() calls": 0}
    events = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        address = listener.getsockname()
        serving = threading.Thread(target=server, args=(listener, cost))
        cpu, start = time.process_time(), time.monotonic()
        serving.start()
        clients = [
            threading.Thread(target=client, args=("A", address, 0, HOLD, events, start)),
            threading.Thread(target=client, args=("B", address, LATE, 0, events, start)),
        ]
        for thread in clients:
            thread.start()
        for thread in [*clients, serving]:
            thread.join()
    wall, cpu = time.monotonic() - start, time.process_time() - cpu
    return sorted(events), wall, cpu, cost


def main():
    print(f"Client A: echo, then {HOLD} s connected; client B connects {LATE} s after A.\n")
    servers = [
        ("1. blocking", serve_blocking),
        ("2. non-blocking, busy", serve_busy),
        ("3. selectors, readiness", serve_selectors),
    ]
    for title, server in servers:
        events, wall, cpu, cost = run(server)
        b_waited = next(t for t, what in events if what == "B echoed") - LATE
        print(f"{title} ({server.__name__})")
        print(f"   order: {', '.join(what for _, what in events)}")
        print(f"   client B waited {b_waited:.2f} s for its echo")
        print(f"   CPU {cpu:.3f} s in {wall:.2f} s ({cpu / wall:.0%} of a core)", end="")
        print(f"; calls that raised BlockingIOError: {cost['BlockingIOError']}", end="")
        print(f"; select() calls: {cost['select() calls']}\n")
    print("Blocking serves one client at a time; busy polling serves both and burns a core;")
    print("readiness serves both and sleeps. Every loop in loops/ is built on the third.")


if __name__ == "__main__":
    main()
