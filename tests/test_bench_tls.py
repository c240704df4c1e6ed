"""Echo's TLS point: registered beside the plain headline point without moving it, measured with
``--tls`` on both processes, and rendered as TLS's cost per request (bench/studies/tls/render.py).

Stores here are small and synthetic, as in test_bench.py and test_verdict.py: nothing is run.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench import headline, runner
from bench.pages import chooser
from bench.plan import Point, Row
from bench.render.intervals import ratio_interval
from bench.studies import echo
from bench.studies.echo import measure
from bench.studies.echo import render as echo_render
from bench.studies.tls import render as tls

ROOT = Path(__file__).resolve().parent.parent


def test_plain_points_keep_their_keys_and_tls_adds_two_at_the_headline():
    for full in (False, True):
        points = echo.points(full)
        over_tls = [p for p in points if p.args.get(headline.TLS)]
        plain = [p for p in points if not p.args.get(headline.TLS)]
        assert len(over_tls) == 2 and {headline.regime(p.args) for p in over_tls} == {
            "closed loop",
            "fixed load",
        }
        for point in over_tls:
            twin = {k: v for k, v in point.args.items() if k != headline.TLS}
            assert {k: twin[k] for k in headline.HEADLINE_POINT} == headline.HEADLINE_POINT
            assert point.repetitions == echo.TLS_REPETITIONS
            assert twin in [p.args for p in plain], "each TLS point has its plain twin"
            assert twin.get("rate") in (None, headline.HEADLINE_RATE)
        assert all(headline.TLS not in p.key for p in plain)
    # every point stored in the committed results is still a current one, under its key
    for mode in ("quick", "full"):
        path = ROOT / "reports" / "results" / mode / "echo.json"
        if path.exists():
            stored = set(json.loads(path.read_text())["points"])
            assert stored <= {p.key for p in echo.points(mode == "full")}


def test_readers_of_the_plain_headline_never_take_the_tls_point():
    closed_tls = {**headline.HEADLINE_POINT, headline.TLS: True}
    paced_tls = {"measure": headline.PACED, **closed_tls, "rate": headline.HEADLINE_RATE}
    for glance in echo.GLANCE:
        assert not all(closed_tls.get(k) == v for k, v in glance.where)
        assert not all(paced_tls.get(k) == v for k, v in glance.where)
    for chart in echo.CHARTS:
        assert not all(paced_tls.get(k) == v for k, v in chart.where)
        assert not all(closed_tls.get(k) == v for k, v in chart.where)
    # the bench's --where: "None" asks for the parameter absent
    plain = Point("echo", (("size", 1024), ("connections", 100)), ())
    secure = Point("echo", (("size", 1024), ("connections", 100), (headline.TLS, True)), ())
    assert runner.matches(plain, {"tls": "None"}) and not runner.matches(secure, {"tls": "None"})
    assert runner.matches(secure, {"tls": "True"}) and not runner.matches(plain, {"tls": "True"})


def test_a_tls_point_runs_both_processes_with_tls(tmp_path):
    params = {**headline.HEADLINE_POINT, headline.TLS: True}
    for row in (Row("asyncio", "coroutines"), Row("uvloop-protocol", "native", anchor=True)):
        assert measure.server_argv(row, params)[-1] == "--tls"
        assert "--tls" not in measure.server_argv(row, dict(headline.HEADLINE_POINT))
    assert "--tls" in measure.load_argv(1, params, 1.0, tmp_path / "o.json", 1)
    assert "--tls" not in measure.load_argv(1, headline.HEADLINE_POINT, 1.0, tmp_path / "o.json", 1)


def _reps(values, **more):
    return [{"server_cpu_us": v, "requests_per_s": 1000.0, **more} for v in values]


def _points(tls_session: str = "A") -> dict:
    """A plain and a TLS headline point in each measure; TLS costs twice plain, round by round
    (each round's pair moves together), for two rows."""
    plain_rounds = {"asyncio/coroutines": (40, 44, 48, 52), "uvloop-protocol/native": (10, 11, 12)}
    points = {}
    for paced in (False, True):
        base = {"measure": headline.PACED, "rate": headline.HEADLINE_RATE} if paced else {}
        for secure in (False, True):
            params = {**base, **headline.HEADLINE_POINT, **({headline.TLS: True} if secure else {})}
            rows = {
                key: {
                    "session": tls_session if secure else "A",
                    "reps": _reps([v * (2 if secure else 1) for v in values]),
                }
                for key, values in plain_rounds.items()
            }
            points[json.dumps(params)] = {"params": params, "rows": rows, "baselines": {}}
    return points


def test_tls_cost_table_pairs_by_round_within_a_session():
    text = "\n".join(tls.lines(_points()))
    assert text.startswith(f"### {tls.TITLE}")
    header = next(line for line in text.splitlines() if line.startswith("| row"))
    assert header.count("|") - 1 <= 8, "a table of at most 8 columns"
    assert "closed loop: plain (µs)" in header and "fixed load: TLS ÷ plain" in header
    row = next(line for line in text.splitlines() if line.startswith("| asyncio · coroutines"))
    # medians 46 and 92 µs; every round's ratio is exactly 2, so its interval is [2.00–2.00]
    assert "46.0" in row and "92.0" in row and row.count("×2.00 [2.00–2.00]") == 2
    assert "uvloop-protocol (anchor)" in text
    assert "*What TLS costs:* closed loop: ×2.00 (median over 2 rows)" in text
    assert "†" not in text


def test_tls_cost_from_two_sessions_is_a_ratio_of_medians_and_says_so():
    text = "\n".join(tls.lines(_points(tls_session="B")))
    row = next(line for line in text.splitlines() if line.startswith("| asyncio · coroutines"))
    unpaired = ratio_interval([80, 88, 96, 104], [40, 44, 48, 52])
    assert f"×{unpaired[0]:.2f} [{unpaired[1]:.2f}–{unpaired[2]:.2f}] †" in row
    assert "† plain and TLS from different sessions" in text


def test_no_tls_point_no_tls_table():
    plain = {k: v for k, v in _points().items() if not v["params"].get(headline.TLS)}
    assert tls.lines(plain) == []
    assert echo_render.section_end(plain) == echo_render.fixed_against_closed(plain)
    # a TLS point whose plain twin is not stored has nothing to be read against
    lonely = {k: v for k, v in _points().items() if v["params"].get(headline.TLS)}
    assert tls.lines(lonely) == []


def test_the_verdict_reads_the_plain_point_even_with_tls_stored_first(tmp_path):
    points = _points()
    ordered = dict(sorted(points.items(), key=lambda kv: not kv[1]["params"].get(headline.TLS)))
    folder = tmp_path / "results" / "quick"
    folder.mkdir(parents=True)
    (folder / "echo.json").write_text(json.dumps({"points": ordered, "sessions": {}}))
    plain = {"measure": headline.PACED, **headline.HEADLINE_POINT, headline.TLS: None}
    chosen = chooser.point(json.loads((folder / "echo.json").read_text()), plain)
    assert chosen is not None and not chosen["params"].get(headline.TLS)
    chosen = chooser.point(
        json.loads((folder / "echo.json").read_text()), dict(headline.HEADLINE_PACED)
    )
    assert chosen is not None and not chosen["params"].get(headline.TLS)


def test_a_row_its_table_calls_invalid_has_no_figure_here_and_no_ratio():
    """Five of six plain closed-loop repetitions with the load generator saturated: the closed
    loop's table calls the row invalid, so this table quotes no median of the sixth either."""
    points = _points()
    closed = next(
        p
        for p in points.values()
        if not p["params"].get(headline.TLS) and "rate" not in p["params"]
    )
    row = closed["rows"]["uvloop-protocol/native"]
    row["reps"] = _reps([10, 11, 12, 13, 14], peer_cpu_share=0.99) + _reps([12])
    text = "\n".join(tls.lines(points))
    line = next(ln for ln in text.splitlines() if ln.startswith("| uvloop-protocol (anchor)"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:4] == [tls.NO_FIGURE, "22.0", "—"]  # TLS side still has its figure
    assert cells[6].startswith("×2.00"), "the fixed load's ratio is untouched"
    assert f"*{tls.NO_FIGURE}*" in text
    assert "closed loop: ×2.00 (median over 1 rows)" not in text
