"""Step 0: why an event loop exists, shown with four echo servers and two clients.

Run it (a few seconds)::

    python -m loops.why_a_loop

The four servers echo what a client sends, on real loopback sockets, to two real client threads:
client A connects, gets its echo, then keeps its connection open a while (a person typing);
client B connects a moment later and wants its echo at once.

1. **Blocking** (`serve_blocking`): a socket call waits until it can finish, so the server
   sits in ``recv()`` on A's socket and B, though the kernel has already accepted its
   connection, gets nothing until A leaves. One client at a time.
2. **A thread per client** (`serve_threads`): the usual way out. Each connection gets a thread
   running the blocking loop above, and the kernel switches between threads as their sockets
   get bytes. Both clients are served; the price is a thread per connection: a stack, and a
   switch by the kernel for each thread that wakes. The demo then measures that price at a few
   hundred clients against the selectors server of 4 (`thread_cost`: memory per client
   and context switches per echo, read from ``/proc``). The lab keeps this design as a variant,
   ``loops/threads/``: the conformance suite plays its properties and the bench runs the
   workloads on it (``python -m bench run --loop threads``) beside the loops that replace it.
3. **Non-blocking, busy** (`serve_busy`): ``sock.setblocking(False)`` makes every call return
   at once; a call that cannot finish now raises ``BlockingIOError`` instead of waiting. Now
   one thread serves both clients by trying every socket in turn, but it never waits, so it
   tries again and again while nothing happens: the ``BlockingIOError`` count and a core's
   worth of CPU (``time.process_time``) are the price.
4. **Readiness** (`serve_selectors`): ``selectors`` (epoll here) asks the kernel which sockets
   are *readable* (a recv would not block: bytes are waiting, the peer has closed, or an error
   is pending; for the listening socket, a connection waits to be accepted) and *sleeps* until
   one is. Both clients served by one thread, no failed call, almost no CPU.

The fourth is what a *readiness* loop is built on: wait for readiness, then run the code that
was waiting for it. Everything after this step (timers; a queue of work ready to run; tasks,
the functions a loop runs by turns) is built around such a wait; ``loops/README.md`` goes on
from here, and its table of designs says which loops wait this way and which two do not
(completions, threads).
"""

import os
import selectors
import socket
import threading
import time
from pathlib import Path

HOLD = 0.4  # seconds client A keeps its connection open after its echo
LATE = 0.05  # seconds after A that client B connects


def serve_blocking(listener, cost, clients=2):
    """One client at a time: accept, then echo until that client closes."""
    for _ in range(clients):
        conn, _address = listener.accept()  # waits for a connection
        echo_until_closed(conn)


def echo_until_closed(conn):
    """The blocking echo of one client: waits for this client's bytes, nobody else's."""
    with conn:
        while data := conn.recv(1024):  # b"" is end of file: the client closed
            conn.sendall(data)


def serve_threads(listener, cost, clients=2):
    """A thread per client, each running the blocking echo: the kernel switches between them."""
    threads = []
    for _ in range(clients):
        conn, _address = listener.accept()
        thread = threading.Thread(target=echo_until_closed, args=(conn,))
        thread.start()
        threads.append(thread)
        cost["threads started"] += 1
    for thread in threads:
        thread.join()


def serve_busy(listener, cost, clients=2):
    """Every socket non-blocking, tried in turn, forever: nothing waits, so nothing sleeps."""
    listener.setblocking(False)
    conns, closed = [], 0
    while closed < clients:
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


def serve_selectors(listener, cost, clients=2):
    """Sleep in select() until a socket is readable, then do what that socket needs."""
    selector = selectors.DefaultSelector()
    listener.setblocking(False)
    selector.register(listener, selectors.EVENT_READ)
    closed = 0
    while closed < clients:
        cost["select() calls"] += 1
        for key, _events in selector.select():  # sleeps until the kernel says "readable"
            if key.fileobj is listener:
                conn, _address = listener.accept()  # cannot fail: a connection is waiting
                conn.setblocking(False)
                selector.register(conn, selectors.EVENT_READ)
            # Readable: bytes wait, or end of file (b""), or a pending error, which recv raises
            # (a peer's reset: ConnectionResetError; this demo lets it end the server).
            elif data := key.fileobj.recv(1024):
                key.fileobj.sendall(data)
            else:  # end of file: the client closed
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
    cost = {"BlockingIOError": 0, "select() calls": 0, "threads started": 0}
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


CLIENTS = 300  # clients of the cost measurement: a few hundred
ECHOES = 20  # echoes per client in it


def _proc(pid):
    """From /proc: resident and virtual memory (KiB), threads, context switches of all threads."""
    status = Path(f"/proc/{pid}/status").read_text()
    field = {line.split(":")[0]: line.split(":")[1].split() for line in status.splitlines()}
    switches = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if "ctxt_switches:" in line:
                    switches += int(line.split()[1])  # voluntary and involuntary
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return int(field["VmRSS"][0]), int(field["VmSize"][0]), int(field["Threads"][0]), switches


def thread_cost(server, clients=CLIENTS, echoes=ECHOES):
    """What `server` costs per client, in a process of its own so that only it is counted:
    the memory its clients add (resident, and address space), its threads, and the context
    switches of all its threads per echo, while every client sends and waits for its echo."""
    with socket.create_server(("127.0.0.1", 0), backlog=clients) as listener:
        pid = os.fork()
        if pid == 0:  # the child: serve, then leave without running the parent's cleanup
            try:
                server(
                    listener,
                    {"BlockingIOError": 0, "select() calls": 0, "threads started": 0},
                    clients,
                )
            finally:
                os._exit(0)
        time.sleep(0.2)  # let the child reach its first wait
        before = _proc(pid)
        socks = [socket.create_connection(listener.getsockname()) for _ in range(clients)]
        for sock in socks:  # one echo each: every client has been accepted and served once
            sock.sendall(b"ping")
        for sock in socks:
            sock.recv(1024)
        served = _proc(pid)
        for _ in range(echoes):
            for sock in socks:
                sock.sendall(b"ping")
            for sock in socks:
                sock.recv(1024)
        after = _proc(pid)
        for sock in socks:
            sock.close()
        os.waitpid(pid, 0)
    return {
        "resident KiB": (served[0] - before[0]) / clients,
        "address space KiB": (served[1] - before[1]) / clients,
        "threads": served[2],
        "switches per echo": (after[3] - served[3]) / (clients * echoes),
    }


def main():
    print(f"Client A: echo, then {HOLD} s connected; client B connects {LATE} s after A.\n")
    servers = [
        ("1. blocking", serve_blocking),
        ("2. a thread per client", serve_threads),
        ("3. non-blocking, busy", serve_busy),
        ("4. selectors, readiness", serve_selectors),
    ]
    for title, server in servers:
        events, wall, cpu, cost = run(server)
        b_waited = next(t for t, what in events if what == "B echoed") - LATE
        print(f"{title} ({server.__name__})")
        print(f"   order: {', '.join(what for _, what in events)}")
        print(f"   client B waited {b_waited:.2f} s for its echo")
        print(f"   CPU {cpu:.3f} s in {wall:.2f} s ({cpu / wall:.0%} of a core)", end="")
        print(f"; calls that raised BlockingIOError: {cost['BlockingIOError']}", end="")
        print(f"; select() calls: {cost['select() calls']}", end="")
        print(f"; threads started: {cost['threads started']}\n")
    print("Blocking serves one client at a time; a thread per client serves both, busy polling")
    print("serves both and burns a core; readiness serves both with one thread, and sleeps.\n")
    if not Path("/proc/self/task").is_dir() or not hasattr(os, "fork"):
        print("What a thread per client costs is read from Linux's /proc: not measured here.")
        return
    print(f"What each client costs at {CLIENTS} clients, {ECHOES} echoes each (server in a")
    print("process of its own; memory its clients added, context switches of all its threads):")
    for server in (serve_threads, serve_selectors):
        c = thread_cost(server)
        print(
            f"   {server.__name__}: {c['threads']} thread(s); per client "
            f"{c['resident KiB']:.1f} KiB resident, {c['address space KiB'] / 1024:.1f} MiB of "
            f"address space; {c['switches per echo']:.3f} context switches per echo"
        )
    print("A thread's stack is address space reserved whole and memory touched as it grows;")
    print("each echo wakes the thread that waits on that socket, where one selectors thread")
    print("serves every socket its wait reported, without a switch between them.")
    print("The threads variant (loops/threads/) is this design on the lab's contract; its rows")
    print("in the bench show where it stops: python -m bench run --loop threads")


if __name__ == "__main__":
    main()
