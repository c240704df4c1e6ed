"""The instruction profile: reading (bench.studies.instructions.profile), rendering
(bench.studies.instructions.render).

Running callgrind is the bench's business, not a test's: these check the parts that turn a dump
into figures, on a small dump written here in callgrind's format.
"""

from __future__ import annotations

from bench.studies.instructions.profile import BEFORE_COUNTING, attribute, read_dump
from bench.studies.instructions.render import section

# Two trampolines (0x1000: Ring.enter, 0x2000: echo), a ctypes call under the first, a
# coroutine switch under the run loop (no trampoline: counting began inside it), and a call
# line whose inclusive cost must not count as the caller's own.
DUMP = """\
events: Ir
ob=(1) /lib/libpython3.12.so
fn=(1) _PyEval_EvalFrameDefault'0x0000000000001000'py_trampoline_evaluator
0 100
cfn=(2) PyCFuncPtr_call'_PyEval_EvalFrameDefault'0x0000000000001000
calls=1 0
0 999
ob=(2) /lib/_ctypes.cpython-312.so
fn=(2)
0 40
ob=(1)
fn=(3) gen_send'method_vectorcall_O'_PyEval_EvalFrameDefault
0 30
fn=(4) _PyEval_EvalFrameDefault'0x0000000000002000'py_trampoline_evaluator'gen_send
0 7
"""
FUNCTIONS = {
    0x1000: "Ring.enter:/lab/loops/completions/uring.py",
    0x2000: "echo:/lab/workloads/echo/coroutines.py",
}


def test_a_dump_is_read_as_self_cost_per_context_without_the_calls_inclusive_cost(tmp_path):
    path = tmp_path / "cg.out.1"
    path.write_text(DUMP)
    cost, objects = read_dump(path)
    assert sum(cost.values()) == 177  # 100 + 40 + 30 + 7: the call's 999 is not self cost
    assert objects["PyCFuncPtr_call"] == "/lib/_ctypes.cpython-312.so"


def test_each_instruction_goes_to_its_part_and_to_the_nearest_python_function(tmp_path):
    path = tmp_path / "cg.out.1"
    path.write_text(DUMP)
    parts, functions = attribute(*read_dump(path), FUNCTIONS)
    assert parts == {"ring": 100, "ctypes": 40, "task switch": 30, "protocol": 7}
    assert functions[FUNCTIONS[0x1000]] == 140  # its own code and the ctypes call it made
    assert functions[BEFORE_COUNTING] == 30


def test_the_section_compares_the_twins_part_by_part_and_lists_the_levers():
    def row(split, ring, total):
        return {
            "split": {
                "per_request": split,
                "connections": 20,
                "rate": 200,
                "parts": {"ring": ring},
                "python": "/x/versions/3.12.1/bin/python3.12",  # -X perf's, as profile.py stores it
            },
            "total": {"per_request": total, "python": "/x/versions/3.11.7/bin/python3"},
        }

    data = {
        "rows": {
            "traps": row(100.0, 0.0, 60.0),
            "completions": row(150.0, 40.0, 90.0),
            "traps (paced 200/s)": row(120.0, 0.0, 70.0),
            "completions (paced 200/s)": row(240.0, 90.0, 140.0),
        },
        "levers": [
            {"label": "main", "commit": "abc", "per_request": 200.0},
            {"label": "a lever", "commit": "def", "per_request": 150.0},
        ],
    }
    text = "\n".join(section(data))
    assert "| instructions per request, closed loop | traps | completions |" in text
    assert "| total, Python 3.11 | 60 | 90 |" in text
    assert "completions / traps: 1.50 under `-X perf`, 1.50 on Python 3.11." in text
    assert "| a lever | def | 150 | -50 |" in text
    assert "completions / traps: 2.00 under `-X perf`, 2.00 on Python 3.11." in text  # paced
    assert "Not measured" in "\n".join(section(None))


def test_the_anatomy_calls_a_ring_rows_sends_syscalls_where_it_counted_them():
    """The completions loop tries each send first (api.sendall), so its anatomy counts a send(2)
    per request: the prose says so instead of calling every send an entry in the ring."""
    from bench.studies.anatomy.render import _in_the_ring

    tried_first = _in_the_ring({"recv": 0.0, "send": 1.02})
    assert tried_first.startswith("Its receives are entries in the ring") and "1.02" in tried_first
    assert _in_the_ring({"recv": 0.0, "send": 0.0}).startswith("Its receives and sends are")
    # Its receives tried before any SQE (api.recv): recv syscalls, some finding nothing, the
    # rest SQEs.
    both = _in_the_ring({"recv": 0.39, "recv_eagain": 0.02, "send": 1.0})
    assert both.startswith("Its receives are tried with recv(2) before any SQE, 0.39 recv")
    assert "0.02" in both
    assert "its sends are syscalls (1.00" in both


def test_calls_into_a_trampoline_are_counted_per_python_function(tmp_path):
    from bench.studies.instructions.profile import read_calls

    path = tmp_path / "cg.out.2"
    path.write_text(
        "events: Ir\n"
        "fn=(1) _PyEval_EvalFrameDefault'0x0000000000001000'py_trampoline_evaluator\n"
        "0 5\n"
        "cfn=(2) 0x0000000000002000'py_trampoline_evaluator'_PyEval_EvalFrameDefault\n"
        "calls=3 0\n"
        "0 90\n"
        "cfn=(2)\n"
        "calls=2 0\n"
        "0 60\n"
    )
    calls = read_calls(path, FUNCTIONS)
    assert calls == {FUNCTIONS[0x2000]: 5}


def test_the_section_ends_with_the_twins_cpu_ratio_measured_in_one_session():
    """bench.studies.instructions.render.measured: the bench's server CPU per echo request for the
    two columns at the headline point, closed loop then fixed load, with the ratio's interval only
    where both rows come from one session."""
    from types import SimpleNamespace

    from bench.studies.echo import HEADLINE_RATE
    from bench.studies.instructions.render import measured

    def rows(params, traps, completions, sessions=("s1", "s1")):
        return {
            "params": params,  # as bench.store keeps a point: its parameters, then its rows
            "rows": {
                "traps/coroutines": {
                    "session": sessions[0],
                    "reps": [{"server_cpu_us": v} for v in traps],
                },
                "completions/coroutines": {
                    "session": sessions[1],
                    "reps": [{"server_cpu_us": v} for v in completions],
                },
            },
        }

    closed = "size=1024,connections=100,warmup_s=0.2,duration_s=0.6"
    paced = f"measure=paced,size=1024,connections=100,rate={HEADLINE_RATE},warmup_s=0.2"
    other = "size=1024,connections=1,warmup_s=0.2,duration_s=0.6"  # not the headline point
    echo = SimpleNamespace(
        data={
            "points": {
                paced: rows(
                    {"measure": "paced", "size": 1024, "connections": 100, "rate": HEADLINE_RATE},
                    [36.0, 37.0, 36.5],
                    [40.0, 41.0, 40.5],
                    ("s1", "s2"),
                ),
                closed: rows({"size": 1024, "connections": 100}, [6.6, 6.7, 6.5], [5.4, 5.3, 5.5]),
                other: rows({"size": 1024, "connections": 1}, [1.0, 1.0], [9.0, 9.0]),
            }
        }
    )
    # A repetition whose load generator saturated its core is invalid: not in the figure.
    saturated = {"server_cpu_us": 50.0, "peer_cpu_share": 0.99}
    echo.data["points"][closed]["rows"]["completions/coroutines"]["reps"].append(saturated)
    said = measured(echo, ["traps", "completions"])
    closed_part, paced_part = said.split("; ")
    assert "at the closed loop, traps 6.6 µs against completions 5.4 µs" in closed_part
    assert "completions / traps ×0.82 [" in closed_part and closed_part.endswith("cheaper")
    assert f"at the fixed load of {HEADLINE_RATE:,} requests/s" in paced_part
    assert "(two sessions: no ratio)" in paced_part and "×" not in paced_part
    assert measured(None, ["traps", "completions"]) is None
    assert measured(SimpleNamespace(data={"points": {}}), ["traps", "completions"]) is None


def test_the_section_reads_the_twins_in_the_closed_loop_anatomy_with_an_interval():
    """bench.studies.instructions.render.in_the_anatomy: the closed-loop anatomy's CPU repetitions
    of the two columns as a ratio with its interval; nothing where a row has fewer than two."""
    from bench.studies.instructions.render import in_the_anatomy

    closed = {
        "rows": {
            "traps/coroutines": {"cpu_us_reps": [6.49, 6.41, 6.77]},
            "completions/coroutines": {"cpu_us_reps": [5.26, 5.18, 5.34]},
        }
    }
    said = in_the_anatomy(closed, ["traps", "completions"])
    assert "traps 6.49 µs against completions 5.26 µs" in said
    assert "completions / traps ×0.80 [" in said and said.endswith("cheaper.")
    closed["rows"]["traps/coroutines"]["cpu_us_reps"] = [6.49]
    assert in_the_anatomy(closed, ["traps", "completions"]) is None
    assert in_the_anatomy(None, ["traps", "completions"]) is None
