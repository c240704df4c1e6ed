"""`python -m bench reproduce`: the committed headline ratios, measured again, each said to land
inside its committed interval or not, and the first screen's line about it."""

import json

from bench import reproduce
from bench.render import reproduction
from bench.store import RESULTS, ResultStore, results_path


def committed() -> ResultStore:
    return ResultStore.load(results_path(RESULTS, "quick", "echo"), "echo", "quick")


def test_the_headline_ratios_are_the_key_rows_against_both_user_servers():
    found = reproduce.ratios(committed())
    assert found, "the committed quick run holds the headline points"
    for name, (ratio, low, high) in found.items():
        assert name.startswith(("closed loop · ", "fixed load · "))
        assert name.endswith((" × asyncio-protocol", " × uvloop-protocol"))
        assert low <= ratio <= high
    assert any("selectors-floor" in name for name in found)  # a control is read too
    assert not any("trio · coroutines" in name for name in found)  # not a key row


def test_a_ratio_that_moved_out_of_its_interval_is_said_so():
    found = reproduce.ratios(committed())
    same = reproduce.compare(found, found)
    assert all(entry["inside"] for entry in same)
    doubled = {name: (r * 2, lo * 2, hi * 2) for name, (r, lo, hi) in found.items()}
    moved = reproduce.compare(found, doubled)
    assert not any(
        entry["inside"] for entry in moved if entry["committed"][2] < 2 * entry["committed"][0]
    )


def test_the_first_screen_counts_sessions_on_this_machine_only(tmp_path):
    assert "not measured yet" in reproduction.line(tmp_path)[0]
    ratios = [
        {"ratio": "a", "committed": [1.0, 0.9, 1.1], "new": [1.05, 1.0, 1.1], "inside": True},
        {"ratio": "b", "committed": [1.0, 0.9, 1.1], "new": [1.2, 1.1, 1.3], "inside": False},
    ]
    sessions = [
        {"date": "2026-11-27T16:00:00+00:00", "same_machine": True, "ratios": ratios},
        {"date": "2026-11-27T17:00:00+00:00", "same_machine": False, "ratios": ratios},
    ]
    (tmp_path / "reproductions.json").write_text(json.dumps({"sessions": sessions}))
    said = reproduction.line(tmp_path)[0]
    assert "2026-11-27 16:00 UTC: 1 of 2 inside, moved at most 20%" in said
    assert "1 session(s) on another machine, not counted" in said
