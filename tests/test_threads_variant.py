"""The threads variant's own bookkeeping: what run() owes its tasks when it ends."""

from __future__ import annotations

import threading

import pytest

from loops.threads import api


@pytest.mark.timeout(30)
def test_a_task_whose_thread_begins_after_run_ended_runs_nothing(monkeypatch):
    # A start cut short (a KeyboardInterrupt between two lines of spawn) can leave a thread
    # that begins only after the main task is over: run() must neither wait for it forever
    # nor let it run the function behind the caller's back.
    started = threading.Event()
    ran = []
    real_start = threading.Thread.start
    late = []

    def start_late(self):
        late.append(self)
        started.set()

    monkeypatch.setattr(threading.Thread, "start", start_late)

    def main():
        return api.spawn(ran.append, "ran")

    task = api.run(main)  # returns: nothing it knows of is running
    monkeypatch.setattr(threading.Thread, "start", real_start)
    assert started.is_set()
    late[0].start()  # the thread begins now, after run() ended
    late[0].join(10)
    assert ran == []
    assert task.done and isinstance(task.error, api.CancelledError)


@pytest.mark.timeout(30)
def test_run_ends_tasks_still_running_whatever_they_wait_on():
    import socket

    left, right = socket.socketpair()
    ended = []

    def waits(what):
        try:
            what()
        except api.CancelledError:
            ended.append(what.__name__)
            raise

    def forever():
        api.sleep(3600)

    def reads():
        api.recv(left, 1)

    def main():
        api.spawn(waits, forever)
        api.spawn(waits, reads)
        api.sleep(0.05)  # so the cancel finds them in their waits (else at their next: the same)

    with left, right:
        api.run(main)
    assert sorted(ended) == ["forever", "reads"]


# The state CPython's signal race leaves behind, made on purpose: the main thread blocks
# SIGINT, so the kernel hands it to another thread, whose C handler marks it tripped and wakes
# no one. The main thread must still run the handler within its slice, in every kind of wait
# a main task can be in.
_WAITS = {
    "join": "api.join(other)",
    "sleep": "api.sleep(math.inf)",
    "cancel": "api.cancel(other)",
    "queue": "api.Queue().get()",
    "worker": "api.run_in_thread(released.wait)",
    "recv": "api.recv(left, 1)",
    "accept": "api.accept(listener)",
    "sendall": "api.sendall(left, payload)",
}
_PROGRAM = """
import math, signal, socket, threading
from loops.threads import api

released = threading.Event()  # set by the handler: every wait below ends only after it ran

def on_sigint(signum, frame):
    released.set()
    raise KeyboardInterrupt

def slow_to_end():  # the thread the kernel hands SIGINT to; its cleanup outlasts a cancel
    try:
        api.sleep(math.inf)
    finally:
        released.wait()

def main():
    global other
    other = api.spawn(slow_to_end)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    api.run_in_thread(int)  # the worker thread exists: nothing but the wait follows "ready"
    print("ready", flush=True)
    WAIT

signal.signal(signal.SIGINT, on_sigint)
left, right = socket.socketpair()
listener = socket.create_server(("127.0.0.1", 0))
payload = b"x" * 2**24  # more than the socket pair holds
try:
    api.run(main)
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
"""


@pytest.mark.timeout(60)
@pytest.mark.parametrize("wait", sorted(_WAITS))
def test_a_signal_another_thread_caught_reaches_the_main_task_in_every_wait(wait):
    import signal
    import subprocess
    import sys
    from pathlib import Path

    process = subprocess.Popen(
        [sys.executable, "-c", _PROGRAM.replace("WAIT", _WAITS[wait])],
        cwd=Path(__file__).resolve().parent.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline() == "ready\n", process.stderr.read()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert "KeyboardInterrupt" in out, out + err
