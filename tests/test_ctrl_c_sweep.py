"""The Ctrl-C sweep's verdicts: each outcome recognised from a run that ends that way, and a
real sweep of one loop that accounts for every moment it passed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from conformance import ctrl_c_sweep
from conformance.ctrl_c_sweep import CLEAN, HANGS, LOST, OTHER, STUCK, Sweep


class Scripted(Sweep):
    """A sweep whose 'workload' reacts to the signal as told; line is this file's marker."""

    def __init__(self, react) -> None:
        self.react, self.interrupted = react, False

    def play(self) -> None:
        if self.interrupted and self.react is refuse_a_second_run:
            raise RuntimeError("still running")
        try:
            marker()
        except KeyboardInterrupt:
            self.interrupted = True
            self.react(self)


def marker() -> None:
    return None  # its start is the moment the signal is raised at


def reraise(case):
    raise KeyboardInterrupt


def refuse_a_second_run(case):
    raise KeyboardInterrupt  # and play refuses the next run


def turn_into_an_error(case):
    raise RuntimeError("deadlock")


def wait_forever(case):
    while True:
        time.sleep(1)


def swallow(case):
    return None


@pytest.mark.parametrize(
    ("react", "outcome"),
    [
        (reraise, CLEAN),
        (refuse_a_second_run, STUCK),
        (turn_into_an_error, OTHER),
        (wait_forever, HANGS),
        (swallow, LOST),
    ],
)
def test_each_ending_is_named(monkeypatch, react, outcome):
    monkeypatch.setattr(ctrl_c_sweep, "PATIENCE", 1.0)
    monkeypatch.setattr(ctrl_c_sweep, "_traced", lambda frame: frame.f_code is marker.__code__)
    # Ignored here, as in a run started as a background job: the child takes Ctrl-C back.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        case = Scripted(react)
        ((start, passing),) = case.moments()  # marker's start, and nothing else
        assert case.interrupted_at(start, passing)[0] == outcome
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_real_sweep_accounts_for_every_moment(tmp_path):
    out = tmp_path / "sweep.jsonl"
    command = [sys.executable, "-m", "conformance.ctrl_c_sweep", "--loop", "handlers"]
    subprocess.run([*command, "--json", str(out)], check=True, capture_output=True, timeout=120)
    (record,) = map(json.loads, out.read_text().splitlines())
    assert record["loop"] == "handlers" and record["style"] == "callbacks"
    assert sum(record["counts"].values()) == record["moments"] > 50
    assert record["counts"][CLEAN] > record["moments"] // 2
    unclean = record["moments"] - record["counts"][CLEAN] - record["counts"]["not reached"]
    assert len(record["faults"]) == unclean


@pytest.mark.parametrize("stored", ["ctrl-c.jsonl", "ctrl-c-3.13.jsonl"])
def test_the_findings_page_shows_the_stored_sweep(stored):
    path = ctrl_c_sweep.ROOT / "reports" / "findings" / stored
    records = [json.loads(line) for line in path.read_text().splitlines()]
    page = (ctrl_c_sweep.ROOT / "reports" / "findings-ctrl-c.md").read_text()
    assert ctrl_c_sweep.table(records) in page, f"run --stored on {stored}, paste its tables"
    assert ctrl_c_sweep.faults(records) in page, f"run --stored on {stored}, paste its tables"


def test_the_suite_started_as_a_background_job_still_plays_ctrl_c():
    # A shell's `cmd &` starts the run with SIGINT ignored, which every child inherits through
    # exec; the suite's Ctrl-C properties must still see the loop's own stop, not a lost signal.
    test = (
        "conformance/test_faults_loop.py::test_ctrl_c_ends_a_workload_cleanly[handlers-callbacks]"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        cwd=ctrl_c_sweep.ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 passed" in done.stdout
