"""A machine is its exact CPU, microcode and kernel build, not its marketing name: two sessions
that differ in any of them are two machines to the store and to every page that names one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from machine import environment

V669 = {
    "host": "vm",
    "cpu": "AMD EPYC",
    "logical_cores": 2,
    "memory_bytes": 24 * 2**30,
    "platform": "Linux-6.18.44-fc-v669-x86_64-with-glibc2.36",
    "virtualisation": "docker, hypervisor guest",
    "python": "3.11.7",
    "python_implementation": "CPython",
}


def test_a_session_records_the_exact_cpu_and_the_kernel_build():
    env = environment.capture()
    assert env["kernel_release"] == os.uname().release
    assert env["kernel_build"] == os.uname().version
    if not Path("/proc/cpuinfo").exists():
        pytest.skip("no /proc/cpuinfo here")
    text = Path("/proc/cpuinfo").read_text()
    for field, key in (("cpu family", "family"), ("stepping", "stepping")):
        if field in text:
            assert env["cpu_identity"][key].isdigit(), env["cpu_identity"]
    assert environment.identity(env) in environment.describe(env)


def test_two_kernel_builds_of_one_vm_are_two_machines():
    v782 = {**V669, "platform": V669["platform"].replace("v669", "v782")}
    assert environment.kernel_release(V669) == "6.18.44-fc-v669"
    assert environment.machine_key(V669) != environment.machine_key(v782)
    assert environment.describe(V669) != environment.describe(v782)


def test_another_microcode_is_another_machine():
    older = {**V669, "cpu_identity": {"family": "25", "model": "1", "stepping": "1",
                                      "microcode": "0x1000065"}}  # fmt: skip
    newer = {**older, "cpu_identity": {**older["cpu_identity"], "microcode": "0x1000066"}}
    assert environment.machine_key(older) != environment.machine_key(newer)
    assert "microcode 0x1000065" in environment.describe(older)


def test_a_session_stored_before_the_identity_was_recorded_says_so():
    found = environment.fingerprint(V669)
    assert found["cpu_identity"] == found["kernel_build"] == "not recorded"
    # ... and so it never counts as the machine of a session that records them.
    assert environment.machine_key(V669) != environment.machine_key(environment.capture())


def test_a_store_of_two_machines_splits_into_one_part_each_losing_nothing(tmp_path):
    """Two sessions on two machines (another kernel build): a part each, the machine with more
    rows first, each part's baselines its own sessions'; a session that named no machine stays
    with the first."""
    from bench.store import ResultStore, per_machine

    def env(build: str) -> dict:
        return {"cpu": "AMD EPYC", "platform": f"Linux-6.18.44-fc-{build}-x86_64", "host": "vm"}

    data = {
        "format": 3,
        "workload": "echo",
        "mode": "full",
        "sessions": {"A": {"environment": env("v669")}, "B": {"environment": env("v782")},
                     "C": {}},
        "points": {
            "p1": {"params": {}, "rows": {"x/s": {"session": "A", "reps": []},
                                          "y/s": {"session": "B", "reps": []}},
                   "baselines": {"A": {}, "B": {}}},
            "p2": {"params": {}, "rows": {"x/s": {"session": "B", "reps": []},
                                          "z/s": {"session": "C", "reps": []}},
                   "baselines": {"B": {}}},
        },
    }  # fmt: skip
    store = ResultStore(tmp_path / "echo.json", data)
    assert len(store.machines()) == 2
    parts = per_machine({"echo": store, "sleep": None})
    assert len(parts) == 2
    (first, main), (second, other) = parts
    assert "v782" in first and "v669" in second  # more rows first
    assert main["sleep"] is None and other["sleep"] is None
    kept = main["echo"].data
    assert {k: sorted(p["rows"]) for k, p in kept["points"].items()} == {
        "p1": ["y/s"],
        "p2": ["x/s", "z/s"],  # z/s: its session named no machine
    }
    assert kept["points"]["p1"]["baselines"] == {"B": {}}
    assert list(other["echo"].data["points"]) == ["p1"]
    assert sorted(other["echo"].sessions) == ["A"]
    # one machine: the stores as they are
    single = per_machine({"echo": main["echo"]})
    assert single[0][1]["echo"] is main["echo"]


def test_a_side_studys_figures_stand_only_on_their_machines_page(tmp_path):
    """The cost anatomy and instruction counts are stored with the environment they ran in: a
    page sets them beside its figures only where that is its machine; figures that name no
    machine stand on the run's main page alone, as a session that names none does."""
    from bench.render.page import Page

    v782 = {**V669, "platform": V669["platform"].replace("v669", "v782")}

    def page(name: str, env: dict) -> Page:
        out, machine = tmp_path / name, environment.describe(env)
        return Page("full", {}, out, tmp_path, lambda _: [], None, None, "3.11", machine)

    main, other = page("bench-full.md", V669), page("bench-full-machine-1.md", v782)
    assert main.main and not other.main
    measured = {"environment": v782, "rows": {}}
    assert main.own(measured) is None and other.own(measured) is measured
    unnamed = {"rows": {}}
    assert main.own(unnamed) is unnamed and other.own(unnamed) is None
