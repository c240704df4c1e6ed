"""The answer first (bench/pages/verdict.py, bench/pages/chooser.py): bench.md and the site
open with it.

A row per server users install, each figure against uvloop-protocol in its own session with its
interval and a link to its section, "no ratio: another session" across sessions and "not
measured here" where a study is not stored; the home-made loops after, labelled; multi-core said
as not measured; the conformance suite's worst finding.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench import headline
from bench.pages import verdict
from bench.render.intervals import worded

ROOT = Path(__file__).resolve().parent.parent


def _rows(rows: dict, metric: str = "server_cpu_us") -> dict:
    """Rows of a stored point: name -> (kind, the metric's value, session), three rounds."""

    def reps(value):
        return [{metric: value * f} for f in (0.98, 1.0, 1.02)]

    return {
        key: {"kind": kind, "session": session, "reps": reps(value)}
        for key, (kind, value, session) in rows.items()
    }


def _echo_store(reports: Path, rows: dict, closed: dict | None = None) -> Path:
    """A stored quick echo run: the headline point at the fixed load and in the closed loop."""

    folder = reports / "results" / "quick"
    folder.mkdir(parents=True)
    paced = {k: v for k, v in headline.HEADLINE_PACED if v is not None}
    plain = {k: v for k, v in headline.HEADLINE_CLOSED if v is not None}
    points = {
        "paced": {"params": paced, "rows": _rows(rows), "baselines": {}},
        "closed": {"params": plain, "rows": _rows(closed or rows), "baselines": {}},
    }
    env = {"pinning": "subject on core 0, peer on core 1", "logical_cores": 2}
    sessions = {"A": {"environment": env}}
    path = folder / "echo.json"
    path.write_text(json.dumps({"points": points, "sessions": sessions}))
    return path


SERVERS = {
    "uvloop-protocol/native": ("anchor", 25.0, "A"),
    "asyncio-protocol/native": ("anchor", 30.0, "A"),
    "trio-streams/native": ("anchor", 50.0, "B"),
    "selectors-floor/native": ("anchor", 26.0, "A"),  # no production loop: left out
    "asyncio/coroutines": ("reference", 40.0, "A"),
    "trio/coroutines": ("reference", 45.0, "A"),
    "gevent/blocking": ("reference", 35.0, "A"),
    "traps/coroutines": ("home-made", 20.0, "A"),
    "callbacks/callbacks": ("home-made", 28.0, "B"),
}


def _row(lines: list[str], name: str) -> list[str]:
    table = next(item for item in lines if item.startswith("|"))
    line = next(ln for ln in table.splitlines() if ln.startswith(f"| `{name}`"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_first_screen_is_a_row_per_server_against_uvloop_protocol(tmp_path):
    _echo_store(tmp_path, SERVERS)
    said = verdict.lines(tmp_path)
    assert said[0].startswith("**Choosing a server**")
    table = said[1].splitlines()
    names = [ln.split("|")[1].strip() for ln in table[2:]]
    # cheapest capacity first; anchors of no production loop and the adapters left out,
    # but gevent, whose users write blocking code over its sockets
    assert names == [
        "`uvloop-protocol`",
        "`asyncio-protocol`",
        "`gevent · blocking`",
        "`trio-streams`",
    ]
    header = table[0]
    assert (
        "[capacity](bench.md#closed-loop-maximum-throughput-1-kib-messages-100-connections)"
        in header
    )
    assert (
        "[idle cost](bench.md#fixed-offered-load-1-kib-messages-100-connections-8000-requestss)"
        in header
    )
    # a column no server has a figure in is said once, not in every cell
    assert len(header.strip("|").split("|")) == 3
    assert said[0].endswith(
        "Not measured for these servers: loaded cost, TLS ÷ plain, memory / connection, "
        "10,000 connections, under uvicorn, own suites."
    )
    base, asyncio_, gevent, trio = (
        _row(said, n)
        for n in ("uvloop-protocol", "asyncio-protocol", "gevent · blocking", "trio-streams")
    )
    assert base[1:3] == ["25.0 µs", "25.0 µs"]
    assert asyncio_[1].startswith("×1.20 [") and asyncio_[1].endswith("], dearer")
    assert gevent[2].startswith("×1.40 [")
    # measured in another session than uvloop-protocol: no ratio, in every column read
    assert trio[1] == trio[2] == "no ratio: another session"


def test_the_home_made_loops_come_after_labelled_and_multi_core_is_said_unmeasured(tmp_path):
    _echo_store(tmp_path, SERVERS)
    said = verdict.lines(tmp_path)
    home = next(s for s in said if s.startswith("**Home-made loops**"))
    assert said.index(home) == 2 and "not packages to deploy" in home
    # the cheapest by each measure, against uvloop-protocol in its own session
    assert (
        "by capacity `traps · coroutines`, 20.0 µs per request (against uvloop-protocol ×0.80 ["
        in home
    )
    assert "], cheaper)" in home
    multi = next(s for s in said if s.startswith("**Multi-core: not measured here.**"))
    assert "subject on core 0, peer on core 1" in multi and "2 logical cores" in multi
    assert len(said) <= 8


def test_a_server_whose_load_generator_saturated_keeps_its_cost_with_a_floor(tmp_path):
    """In the closed loop, uvloop-protocol outruns the one-core load generator: its server CPU
    per request still stands (a cost, its own), with the requests/s it served at least."""
    path = _echo_store(tmp_path, SERVERS)
    data = json.loads(path.read_text())
    for rep, rate in zip(
        data["points"]["closed"]["rows"]["uvloop-protocol/native"]["reps"],
        (150e3, 155e3, 160e3),
        strict=True,
    ):
        rep.update(peer_cpu_share=0.95, requests_per_s=rate)
    path.write_text(json.dumps(data))
    said = verdict.lines(tmp_path)
    assert _row(said, "uvloop-protocol")[1] == "25.0 µs at ≥ 155,000/s"
    assert _row(said, "asyncio-protocol")[1].startswith("×1.20 [")


def test_each_stored_study_fills_its_column_with_a_linked_same_session_ratio(tmp_path):
    from bench.studies import connections, http

    _echo_store(tmp_path, SERVERS)
    path = tmp_path / "results" / "quick" / "echo.json"
    data = json.loads(path.read_text())
    tls = {**data["points"]["paced"]["params"], headline.TLS: True}
    data["points"]["tls"] = {
        "params": tls,
        "rows": _rows({k: (v[0], v[1] * 1.5, v[2]) for k, v in SERVERS.items()}),
    }
    path.write_text(json.dumps(data))
    memory = {"params": {"connections": connections.CONNECTIONS[False][0], "size": 1024}}
    memory["rows"] = _rows(
        {
            "uvloop-protocol/native": ("anchor", 1000, "A"),
            "asyncio-protocol/native": ("anchor", 2000, "A"),
        },
        connections.HEADLINE,
    )
    (path.parent / "connections.json").write_text(json.dumps({"points": {"m": memory}}))
    web = {"params": dict(http.HEADLINE_POINT)}
    web["rows"] = _rows(
        {"uvloop/asyncio": ("reference", 40000, "A"), "asyncio/asyncio": ("reference", 32000, "A")},
        http.HEADLINE,
    )
    (path.parent / "http.json").write_text(json.dumps({"points": {"h": web}}))
    full = tmp_path / "results" / "full"
    full.mkdir()
    many = {**data["points"]["paced"]["params"], "connections": 10_000}
    (full / "echo.json").write_text(
        json.dumps({"points": {"p": {"params": many, "rows": _rows(SERVERS)}}})
    )
    said = verdict.lines(tmp_path)
    header = said[1].splitlines()[0]
    assert "[TLS ÷ plain](bench.md#tlss-cost-per-request)" in header
    assert "[memory / connection](bench.md#memory-per-connection)" in header
    assert (
        "(bench-full.md#fixed-offered-load-1-kib-messages-10000-connections-8000-requestss)"
        in header
    )
    assert "[under uvicorn](bench.md#http)" in header
    base, mine, trio = (
        _row(said, n) for n in ("uvloop-protocol", "asyncio-protocol", "trio-streams")
    )
    # the loaded rate and the suites are not stored: their columns are left out
    assert mine[3].startswith("×1.50 [") and mine[3].endswith("dearer")  # TLS over its own plain
    assert base[4] == "1,000 B" and mine[4].startswith("×2.00 [")
    assert mine[5].startswith("×1.20 [")  # the full run, at 10,000 connections
    assert base[6] == "40,000/s" and mine[6].startswith("×0.80 [") and mine[6].endswith("slower")
    assert trio[4] == "not measured here" and trio[6] == "not measured here"
    assert trio[5] == "no ratio: another session"
    # the site's index shows the same table
    from htmlreport.build import _markdown_list

    html = _markdown_list(said)
    assert (
        "<table><tr><th>server</th>" in html and '<a href="bench.md#http">under uvicorn</a>' in html
    )
    assert "<td><code>asyncio-protocol</code></td>" in html


def test_the_loaded_rate_has_its_column_and_a_server_that_falls_behind_says_so(tmp_path):
    from bench.pages import chooser

    _echo_store(tmp_path, SERVERS)
    path = tmp_path / "results" / "quick" / "echo.json"
    data = json.loads(path.read_text())
    loaded = {**data["points"]["paced"]["params"], "rate": headline.LOADED_RATE, "curve": True}
    rows = _rows({k: (v[0], v[1] * 0.6, v[2]) for k, v in SERVERS.items()})
    for key in rows:
        for rep in rows[key]["reps"]:
            rep |= {"server_cpu_share": 0.7, "server_blocks_per_request": 0.3}
    short = "server could not keep the rate (20,000 of 38,400 scheduled requests)"
    rows["gevent/blocking"]["reps"][0]["invalid"] = short
    rows["gevent/blocking"]["reps"][1]["invalid"] = short
    data["points"]["loaded"] = {"params": loaded, "rows": rows}
    path.write_text(json.dumps(data))
    said = verdict.lines(tmp_path)
    header = said[1].splitlines()[0]
    title = f"fixed-offered-load-1-kib-messages-100-connections-{headline.LOADED_RATE}-requestss"
    assert f"[loaded cost](bench.md#{title})" in header
    assert f"*loaded cost* at {headline.LOADED_RATE:,};" in said[0]
    base, mine, gevent = (
        _row(said, n) for n in ("uvloop-protocol", "asyncio-protocol", "gevent · blocking")
    )
    assert base[3] == "15.0 µs" and mine[3].startswith("×1.20 [")
    assert gevent[3] == "falls behind (2 of 3 repetitions)"
    # its regime, from the point's own repetitions (the anatomy does not measure it)
    servers = chooser._servers(data["points"]["paced"])
    clause = chooser.regimes.loaded_regime(data["points"]["loaded"], servers)
    assert clause.startswith("a server keeping the rate uses 70% of a core and blocks 0.30")


def test_a_comparison_is_worded_from_its_interval_as_printed():
    assert worded((1.02, 0.95, 1.08)) == (
        "×1.02 [0.95–1.08], can't tell (a difference under 7% would not show here)"
    )
    assert worded((1.01, 0.97, 1.04)) == "×1.01 [0.97–1.04], within ±5%"
    # Judged as printed: [1.00–1.07] holds 1 on the page, so it is not called dearer.
    assert not worded((1.04, 1.004, 1.075)).endswith("dearer")
    assert worded((1.2, 1.1, 1.3)).endswith("dearer")
    assert worded((1.2, 1.1, 1.3), higher_is_better=True).endswith("faster")


def test_bench_md_opens_with_the_verdict_and_the_data_loss_finding(tmp_path):
    from bench.pages.report import main_tables, render
    from bench.studies.anatomy.render import load_anatomy

    results = ROOT / "reports" / "results"
    python, stores = main_tables(results, "quick")
    out = tmp_path / "bench.md"
    render("quick", stores, out, load_anatomy(results), results, python)
    first = "\n".join(out.read_text().splitlines()[:20])
    # the chooser's answers in the first 20 lines: capacity and idle cost, TLS, memory per
    # connection, 10,000 connections, uvicorn and the suites, for the production servers first
    for said in ("**Choosing a server**", "[capacity](", "[idle cost](", "[TLS ÷ plain](",
                 "[memory / connection](", "10,000 connections", "[under uvicorn](",
                 "[own suites](", "| `uvloop-protocol` |", "| `asyncio-protocol` |",
                 "**Home-made loops**", "**Multi-core: not measured here.**",
                 "**How still these figures are**"):  # fmt: skip
        assert said in first, said
    assert first.index("| `trio-streams` |") < first.index("**Home-made loops**")
    if (results / "conformance").is_dir():  # stored by `nox -s conformance`
        assert "*loses data*" in first


def test_every_link_of_the_committed_first_screen_names_a_heading_of_its_page():
    from bench.pages.chooser import slug

    first = "\n".join((ROOT / "reports" / "bench.md").read_text().splitlines()[:22])
    links = re.findall(r"\]\(([\w-]+\.md)#([^)]+)\)", first)
    assert len(links) >= 8
    for page, anchor in links:
        text = (ROOT / "reports" / page).read_text()
        headings = {slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}
        assert anchor in headings, f"{page}#{anchor}"


def test_the_suites_column_counts_each_loops_gaps_and_what_stops_a_run(tmp_path):
    from bench.pages import chooser

    runs = tmp_path / "reports" / "suites"
    runs.mkdir(parents=True)
    for loop in ("asyncio", "uvloop"):
        (runs / f"anyio-3.11.7-{loop}.json").write_text(json.dumps({"loop": loop}))
    toml = tmp_path / "tests" / "real_suites" / "anyio.toml"
    toml.parent.mkdir(parents=True)
    toml.write_text(
        '[[expected]]\ntest = "a"\nloops = ["uvloop"]\nclass = "gap"\nreason = "r"\n'
        '[[expected]]\ntest = "b"\nloops = ["uvloop"]\nclass = "gap"\nreason = "r"\n'
        'not_run = "hangs"\n'
        '[[expected]]\ntest = "c"\nloops = ["uvloop", "asyncio"]\nclass = "machine"\n'
        'reason = "r"\n'
    )
    gaps = chooser._gaps(tmp_path)
    assert chooser._suites(gaps, "uvloop") == "2 findings (anyio), 1 hang or crash the run"
    assert chooser._suites(gaps, "asyncio") == "the suites' reference"
    assert chooser._suites(gaps, "trio") == "not measured here"  # no run of any suite on it
