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
