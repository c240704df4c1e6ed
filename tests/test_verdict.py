"""The answer first (bench/render/verdict.py): bench.md and the site open with it.

It names the cheapest home-made design per echo request with its ratio to uvloop-protocol and
asyncio-protocol and the ratio's interval, takes no ratio across sessions (it says which), and
mirrors the conformance suite's worst finding.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.render import verdict

ROOT = Path(__file__).resolve().parent.parent


def _echo_store(reports: Path, anchor_session: str) -> None:
    """A stored quick echo run: a home-made row in session A, uvloop-protocol in another."""
    from bench.registry import echo

    def reps(value):
        return [{"server_cpu_us": value * f, "rate": 5000.0} for f in (0.98, 1.0, 1.02)]

    params = {"measure": echo.PACED, **echo.HEADLINE_POINT}
    rows = {
        "traps/coroutines": {"kind": "home-made", "session": "A", "reps": reps(20.0)},
        "uvloop-protocol/native": {"kind": "anchor", "session": anchor_session, "reps": reps(25)},
    }
    folder = reports / "results" / "quick"
    folder.mkdir(parents=True)
    point = {"params": params, "rows": rows, "baselines": {}}
    (folder / "echo.json").write_text(json.dumps({"points": {"p": point}, "sessions": {}}))


def test_the_verdict_takes_no_ratio_across_sessions(tmp_path):
    _echo_store(tmp_path, anchor_session="B")
    (_, line, *_) = verdict.lines(tmp_path)  # after the production answer
    assert "`traps · coroutines`, 20.0 µs" in line and "5,000 requests/s" in line
    assert "no ratio to uvloop-protocol: it was measured in another session (B)" in line
    assert not re.search(r"×\d", line)  # no ratio printed


def test_the_verdict_words_a_same_session_ratio_from_its_interval(tmp_path):
    _echo_store(tmp_path, anchor_session="A")
    (_, line, *_) = verdict.lines(tmp_path)
    assert "against uvloop-protocol ×0.80 [" in line and "], cheaper" in line
    assert verdict.worded((1.02, 0.95, 1.08)) == (
        "×1.02 [0.95–1.08], can't tell (a difference under 7% would not show here)"
    )
    assert verdict.worded((1.01, 0.97, 1.04)) == "×1.01 [0.97–1.04], within ±5%"
    # Judged as printed: [1.00–1.07] holds 1 on the page, so it is not called dearer.
    assert not verdict.worded((1.04, 1.004, 1.075)).endswith("dearer")
    assert verdict.worded((1.2, 1.1, 1.3)).endswith("dearer")
    assert verdict.worded((1.2, 1.1, 1.3), higher_is_better=True).endswith("faster")


def test_a_row_measured_at_two_rates_is_two_candidates_never_one_median(tmp_path):
    _echo_store(tmp_path, anchor_session="A")
    path = tmp_path / "results" / "quick" / "echo.json"
    data = json.loads(path.read_text())
    row = data["points"]["p"]["rows"]["traps/coroutines"]
    row["reps"] += [{"server_cpu_us": 40.0, "rate": 9000.0} for _ in range(3)]
    path.write_text(json.dumps(data))
    (_, line, *_) = verdict.lines(tmp_path)
    assert "20.0 µs of server CPU per request (median of 3) at a fixed 5,000 requests/s" in line
    assert "against uvloop-protocol ×0.80 [" in line  # the anchor at the same rate only


def test_the_production_answer_comes_first_cheapest_first_against_uvloop_protocol(tmp_path):
    _echo_store(tmp_path, anchor_session="A")
    path = tmp_path / "results" / "quick" / "echo.json"
    data = json.loads(path.read_text())
    rows = data["points"]["p"]["rows"]

    def row(kind, value, session="A"):
        reps = [{"server_cpu_us": value * f, "rate": 5000.0} for f in (0.98, 1.0, 1.02)]
        return {"kind": kind, "session": session, "reps": reps}

    rows["asyncio-protocol/native"] = row("anchor", 30.0)
    rows["trio-streams/native"] = row("anchor", 50.0, session="B")
    rows["selectors-floor/native"] = row("anchor", 26.0)  # no production loop: left out
    rows["asyncio/coroutines"] = row("reference", 40.0)
    rows["trio/coroutines"] = row("reference", 45.0)
    path.write_text(json.dumps(data))
    (line, second, *_) = verdict.lines(tmp_path)
    assert line.startswith(
        "**For a network service** (server CPU per echo request at a fixed 5,000"
    )
    assert line.index("`uvloop-protocol` 25.0 µs") < line.index("`asyncio-protocol` ×1.20 [")
    assert "`trio-streams` (another session: no ratio)" in line
    assert "selectors-floor" not in line and "traps" not in line
    adapters = line.split("Through the lab's adapters: ")[1]
    assert adapters.index("`asyncio · coroutines` ×1.60") < adapters.index("`trio · coroutines`")
    assert second.startswith("**Cheapest home-made design per echo request**")


def test_bench_md_opens_with_the_verdict_and_the_data_loss_finding(tmp_path):
    from bench.render.report import main_tables, render
    from bench.store import load_anatomy

    results = ROOT / "reports" / "results"
    python, stores = main_tables(results, "quick")
    out = tmp_path / "bench.md"
    render("quick", stores, out, load_anatomy(results), results, python)
    first = "\n".join(out.read_text().splitlines()[:15])
    assert "**For a network service**" in first
    assert "Cheapest home-made design per echo request" in first
    assert "uvloop-protocol" in first and "asyncio-protocol" in first
    if (results / "conformance").is_dir():  # stored by `nox -s conformance`
        assert "*loses data*" in first
