"""handlers, the idea alone (Python Cookbook 3rd ed., recipe 11.12): the loop asks every handler.

There is no registration to keep in sync: each turn, ``Loop._run_once`` asks every handler
whether it wants to receive or send, and a handler's own state answers (an echo connection
wants to send while its outgoing buffer holds bytes). ``select()`` waits for those that do.
``loop.py`` is the full loop (its ``run_forever`` repeats ``_run_once``); README.md says what it
adds.
"""

import select
import socket


class EventHandler:
    """The recipe's handler: the loop asks it, every turn, what it wants."""

    def wants_to_receive(self):
        return False

    def wants_to_send(self):
        return False


class EchoServer(EventHandler):
    def __init__(self, loop, sock):
        self.loop, self.sock = loop, sock

    def fileno(self):
        return self.sock.fileno()

    def wants_to_receive(self):
        return True  # a listener always wants connections

    def handle_receive(self):
        conn, _address = self.sock.accept()
        self.loop.add_handler(EchoConnection(self.loop, conn))


class EchoConnection(EventHandler):
    def __init__(self, loop, sock):
        self.loop, self.sock, self.outgoing = loop, sock, b""

    def fileno(self):
        return self.sock.fileno()

    def wants_to_receive(self):
        return not self.outgoing  # backpressure: read again once the echo is written

    def wants_to_send(self):
        return bool(self.outgoing)  # the state answers: something left to echo

    def handle_receive(self):
        self.outgoing = self.sock.recv(65536)
        if not self.outgoing:  # EOF: the peer is done
            self.loop.remove_handler(self)
            self.sock.close()

    def handle_send(self):
        self.outgoing = self.outgoing[self.sock.send(self.outgoing) :]


class Loop:
    def __init__(self):
        self._handlers = {}  # fd -> handler, all asked at every turn

    def add_handler(self, handler):
        self._handlers[handler.fileno()] = handler

    def remove_handler(self, handler):
        del self._handlers[handler.fileno()]

    def _run_once(self):
        # Stage 1: ask every handler what it wants; select() waits for those that can.
        receivers = [h for h in self._handlers.values() if h.wants_to_receive()]
        senders = [h for h in self._handlers.values() if h.wants_to_send()]
        can_receive, can_send, _ = select.select(receivers, senders, [])
        for handler in can_receive:
            handler.handle_receive()
        for handler in can_send:
            handler.handle_send()
        # (Stages 2 and 3, timers and ready callbacks, are what the full loop adds.)


if __name__ == "__main__":
    loop, listener = Loop(), socket.create_server(("127.0.0.1", 0))
    loop.add_handler(EchoServer(loop, listener))
    client = socket.create_connection(listener.getsockname())
    client.sendall(b"ping")
    for turn in (1, 2, 3):  # accept; receive the ping into the buffer; echo it
        loop._run_once()
        wants = [
            (type(h).__name__, h.wants_to_receive(), h.wants_to_send())
            for h in loop._handlers.values()
        ]
        print(f"after turn {turn}, (handler, wants to receive, wants to send): {wants}")
    print(f"the client got {client.recv(100)!r} back")
    client.close()
    loop._run_once()  # the connection reads EOF and removes itself
    print(f"after the client closed: {[type(h).__name__ for h in loop._handlers.values()]}")
