"""`python -m bench reproduce`: the committed headline ratios, measured again, each said to land
inside its committed interval or not, and the first screen's line about it."""

import json

from bench.store import RESULTS, ResultStore, results_path
from bench.studies.reproductions import measure as reproduce
from bench.studies.reproductions import render as reproduction


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


def _reproduction(date: str, machine: str, moves: dict[str, float], paired: bool) -> dict:
    return {
        "date": date,
        "machine": machine,
        "same_machine": True,
        "paired": paired,
        "ratios": [
            {
                "ratio": f"{name} · x × y",
                "committed": [1.0, 0.9, 1.1],
                "new": [new, new, new],
                "inside": abs(new - 1) < 0.1,
            }
            for name, new in moves.items()
        ],
    }


def test_the_spread_between_sessions_is_the_root_mean_square_of_the_log_moves():
    import math

    stored = {
        "sessions": [
            _reproduction("d1", "here", {"fixed load": 1.5}, paired=False),
            _reproduction("d2", "here", {"closed loop": 1.1, "fixed load": 1.2}, paired=True),
            _reproduction("d3", "here", {"fixed load": 1 / 1.2}, paired=True),
            _reproduction("d4", "elsewhere", {"fixed load": 3.0}, paired=True),
        ]
    }
    found = reproduce.between_sessions(stored, "here")
    # Paired sessions only, once there are any; another machine's never.
    assert abs(found["fixed load"]["spread"] - math.log(1.2)) < 1e-12
    assert found["fixed load"]["sessions"] == 2 and found["fixed load"]["ratios"] == 2
    assert abs(found["closed loop"]["spread"] - math.log(1.1)) < 1e-12
    unpaired = reproduce.between_sessions({"sessions": stored["sessions"][:1]}, "here")
    assert abs(unpaired["fixed load"]["spread"] - math.log(1.5)) < 1e-12


def test_the_spread_between_sessions_is_said_beside_intervals_that_do_not_hold_it(tmp_path):
    """A point's stored spread between sessions moves no interval (each is within one
    session); the first screen says it, and says the intervals do not hold it."""
    import shutil

    from bench.pages import verdict
    from bench.store import BETWEEN_SESSIONS

    results = tmp_path / "results"
    shutil.copytree(RESULTS / "quick", results / "quick")
    sessions = [_reproduction("2026-11-27T20:00:00+00:00", "m", {"fixed load": 1.3}, True)]
    (results / "reproductions.json").write_text(json.dumps({"sessions": sessions}))
    path = results_path(results, "quick", "echo")

    def measured(spread: float | None) -> dict:
        store = ResultStore.load(path, "echo", "quick")
        for point in store.data["points"].values():
            point[BETWEEN_SESSIONS] = (
                {"spread": spread, "sessions": 1, "ratios": 1}
                if spread and "rate" in point["params"]
                else None
            )
        store.save()
        return reproduce.ratios(ResultStore.load(path, "echo", "quick"))

    assert measured(None) == measured(0.2)
    bullet = next(s for s in verdict.lines(tmp_path) if s.startswith("**How still"))
    assert bullet.startswith("**How still these figures are**")
    assert "20.0% at the fixed load" in bullet and "0 of 1 ratios inside" in bullet
    assert "within one session and do not hold that move" in bullet


def test_a_reproduction_stores_raw_repetitions_enough_to_recompute_its_ratios(tmp_path):
    store = committed()
    measured = reproduce.repetitions(store)
    assert measured and all(point["rows"] for point in measured.values())
    assert all(row["reps"] for point in measured.values() for row in point["rows"].values())
    # The headline points alone give every headline ratio the whole store gives.
    alone = json.loads(json.dumps(store.data)) | {"points": measured}
    path = tmp_path / "echo.json"
    path.write_text(json.dumps(alone))
    assert reproduce.ratios(ResultStore.load(path, "echo", "quick")) == reproduce.ratios(store)
