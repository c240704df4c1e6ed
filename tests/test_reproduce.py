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


def _point(params: dict, ratios: list[float], session: str = "s") -> dict:
    """A stored point where row "a/native" costs ratio × base "b/native" in each round."""
    base = [10.0 + i for i in range(len(ratios))]
    return {
        "params": params,
        "rows": {
            "a/native": {
                "session": session,
                "reps": [{"cpu": b * r} for b, r in zip(base, ratios, strict=True)],
            },
            "b/native": {"session": session, "reps": [{"cpu": b} for b in base]},
        },
    }


def by_round(reps: list[dict], metric: str) -> dict[int, float]:
    return {i: rep[metric] for i, rep in enumerate(reps)}


def test_a_ratio_is_pooled_across_sessions_once_three_hours_measured_it():
    at = {"size": 1}
    sessions = [
        ("2026-12-07T00:10:00+00:00", _point(at, [1.19, 1.21, 1.20])),
        ("2026-12-07T01:10:00+00:00", _point(at, [1.09, 1.11, 1.10])),
    ]
    assert reproduction.pooled(sessions, "a/native", "b/native", by_round, "cpu") is None
    same_hour = [*sessions, ("2026-12-07T01:50:00+00:00", _point(at, [1.29, 1.31, 1.30]))]
    assert reproduction.pooled(same_hour, "a/native", "b/native", by_round, "cpu") is None
    apart = [*sessions, ("2026-12-07T02:10:00+00:00", _point(at, [1.29, 1.31, 1.30]))]
    found = reproduction.pooled(apart, "a/native", "b/native", by_round, "cpu")
    assert found is not None and found.sessions == 3 and found.scope == "across 3 sessions"
    # the geometric mean of the three sessions' ratios, its interval their t-interval
    assert abs(found.value - (1.2 * 1.1 * 1.3) ** (1 / 3)) < 2e-3
    assert found.low < 1.1 < 1.3 < found.high
    # rows of two sessions in one point are no paired ratio: that session is left out
    split = _point(at, [1.5, 1.5, 1.5])
    split["rows"]["a/native"]["session"] = "other"
    assert reproduction.pooled([*apart[:2], ("2026-12-07T03:00:00+00:00", split)],
                               "a/native", "b/native", by_round, "cpu") is None  # fmt: skip


def test_sessions_pooled_are_the_committed_runs_and_each_reproduction_on_its_machine(tmp_path):
    import shutil

    from machine import environment

    results = tmp_path / "results"
    shutil.copytree(RESULTS / "quick", results / "quick")
    store = committed()
    where = {"measure": "paced", "size": 1024, "connections": 100, "rate": 8000, "tls": None}
    point = next(p for p in store.data["points"].values() if "rate" in p["params"]
                 and p["params"]["rate"] == 8000 and not p["params"].get("tls"))  # fmt: skip
    newest = max(row["session"] for row in point["rows"].values())
    machine = environment.describe(store.sessions[newest]["environment"])
    sessions = [
        {"date": "2026-12-07T01:00:00+00:00", "machine": machine, "same_machine": True,
         "ratios": [], "points": {"k": point}},
        {"date": "2026-12-07T02:00:00+00:00", "machine": "another", "same_machine": False,
         "ratios": [], "points": {"k": point}},
        {"date": "2026-12-07T03:00:00+00:00", "machine": machine, "same_machine": True,
         "ratios": []},  # before raw repetitions were stored: nothing to pool
    ]  # fmt: skip
    (results / "reproductions.json").write_text(json.dumps({"sessions": sessions}))
    found = reproduction.sessions_at(results, where)
    assert [date for date, _ in found][1:] == ["2026-12-07T01:00:00+00:00"]
    assert found[0][1] is point or found[0][1] == point


def test_the_first_screen_counts_the_ratios_inside_and_says_when_they_are_pooled(tmp_path):
    import shutil

    results = tmp_path / "results"
    shutil.copytree(RESULTS / "quick", results / "quick")
    assert reproduction.bullet(results) is None  # never reproduced
    ratios = [
        {"ratio": "a", "committed": [1.0, 0.9, 1.1], "new": [1.05, 1.0, 1.1], "inside": True},
        {"ratio": "b", "committed": [1.0, 0.9, 1.1], "new": [1.2, 1.1, 1.3], "inside": False},
    ]
    sessions = [
        {"date": "2026-11-27T16:00:00+00:00", "machine": "m", "same_machine": True,
         "ratios": ratios},
        {"date": "2026-11-27T17:00:00+00:00", "machine": "x", "same_machine": False,
         "ratios": ratios},
    ]  # fmt: skip
    (results / "reproductions.json").write_text(json.dumps({"sessions": sessions}))
    said = reproduction.bullet(results)
    assert said.startswith("**How still these figures are**")
    assert "in 1 later session(s)" in said and "1 of 2 headline ratios landed inside" in said
    assert "misses about 1 in 20" in said
    assert "pooled once 3 hours are" in said


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
