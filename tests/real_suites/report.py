"""Render reports/real-suites.md from the stored results of ``nox -s real-suites``.

``python -m tests.real_suites.report``: reads ``reports/suites/*.json`` (one file per suite,
interpreter and loop, written by ``lab_loop.py``) and each suite's TOML of expected failures,
writes the page; runs nothing.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

from tests.real_suites.suites import CLASSES, LOOPS, SUITES

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "reports" / "suites"
PAGE = ROOT / "reports" / "real-suites.md"
# The field's reference: the counts zuvloop publishes for the same suites, quoted with their
# source (its README's "Compatibility" section), not measured here.
ZUVLOOP_SOURCE = (
    "https://github.com/Kludex/zuvloop/blob/774502255edb182454d3b28c82e2a230b1454339/README.md"
)
ZUVLOOP = {
    "uvicorn": "1257 passed, no failures",
    "aiohttp": "4473 passed, 36 failed, 33 of which also fail on stock asyncio; "
    "uvloop fails 15 tests of test_client_functional.py and then hangs",
}


def _version(python: str) -> tuple[int, ...]:
    return tuple(int(p) for p in python.split(".") if p.isdigit())


def _suite_section(suite: str, records: list[dict]) -> list[str]:
    spec = SUITES.get(suite)
    title = f"## {suite} {spec.version}" if spec else f"## {suite}"
    lines = [title, ""]
    if suite in ZUVLOOP:
        lines += [
            f"zuvloop publishes, for its own loop: {ZUVLOOP[suite]} ([source]({ZUVLOOP_SOURCE})).",
            "",
        ]
    for python in sorted({r["python"] for r in records}, key=_version):
        rows = [r for r in records if r["python"] == python]
        rows.sort(key=lambda r: LOOPS.index(r["loop"]) if r["loop"] in LOOPS else 9)
        lines += [
            f"### {suite}, Python {python}",
            "",
            "| loop | passed | failed | expected failures | passed though expected to fail now "
            "and then | skipped | deselected | loops made |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            c = r["counts"]
            # A strict xfail that passes is counted as failed by pytest already; "xpassed" holds
            # only the non-strict ones (a test that fails now and then), which failed nothing.
            failed = c["failed"] + c["error"]
            lines.append(
                f"| {r['loop']} | {c['passed']} | {failed} | {c['xfailed']} | {c['xpassed']} | "
                f"{c['skipped']} | {c.get('deselected', 0)} | {r['loops_made']} |"
            )
        lines += ["", *_provenance(rows)]
        installed = sorted({r.get("installed_by", "policy") for r in rows})
        lines += [f"Loops installed by: {', '.join(installed)}.", ""]
        for r in rows:
            if r["failed"]:
                lines += [f"Failed on {r['loop']}: " + ", ".join(f"`{t}`" for t in r["failed"]), ""]
    lines += _expected_section(suite)
    return lines


def _provenance(rows: list[dict]) -> list[str]:
    """When and at which commit each run was made, and with which versions; a run stored
    before these were recorded says so."""
    if not any("date" in r for r in rows):
        return ["Date, commit and versions of these runs: not recorded (stored before runs "
                "recorded them).", ""]  # fmt: skip
    lines = []
    for r in rows:
        if "date" not in r:
            lines.append(f"- {r['loop']}: date, commit and versions not recorded")
            continue
        commit = r.get("commit") or {}
        dirty = " + uncommitted changes" if commit.get("dirty") else ""
        versions = ", ".join(f"{k} {v}" for k, v in (r.get("versions") or {}).items() if v)
        lines.append(
            f"- {r['loop']}: {r['date'][:10]}, commit `{(commit.get('hash') or '?')[:10]}`"
            f"{dirty}, {versions}"
        )
    return ["Runs:", "", *lines, ""]


def _expected_section(suite: str) -> list[str]:
    spec = SUITES.get(suite)
    if spec is None or not spec.expected.exists():
        return []
    entries = tomllib.loads(spec.expected.read_text()).get("expected", [])
    if not entries:
        return [f"No expected failures (`tests/real_suites/{suite}.toml`).", ""]
    lines = [f"Expected failures (`tests/real_suites/{suite}.toml`):", ""]
    lines += ["| test | loops | class | reason |", "|---|---|---|---|"]
    for e in entries:
        reason = e["reason"].replace("|", "\\|")
        loops = ", ".join(e["loops"]) + (
            f" (Python {', '.join(e['pythons'])})" if "pythons" in e else ""
        )
        not_run = f" ({e['not_run']}: not run)" if e.get("not_run") else ""
        lines.append(f"| {_tests_of(e)} | {loops} | {e['class']}{not_run} | {reason} |")
    return [*lines, ""]


def _tests_of(entry: dict) -> str:
    """An entry's tests as a reader reads them: its pattern, or the first of its list and how
    many more (one cause of many tests)."""
    if "tests" in entry:
        return f"`{_shown(entry['tests'][0])}` and {len(entry['tests']) - 1} more"
    return f"`{_shown(entry['test'])}`"


def _shown(pattern: str) -> str:
    """A TOML test pattern as a reader reads it: fnmatch's ``[[]`` is a plain ``[``."""
    return pattern.replace("[[]", "[")


def _findings(records: list[dict]) -> list[str]:
    """The real gaps first: every expected failure of class ``gap``, by loop, with what a
    user of that loop would see (its reason); then any drop-in failure no TOML classes."""
    gaps = []
    for name, spec in SUITES.items():
        if spec.expected.exists():
            entries = tomllib.loads(spec.expected.read_text()).get("expected", [])
            gaps += [(loop, name, e) for e in entries if e["class"] == "gap" for loop in e["loops"]]
    unlisted = sorted({r["suite"] for r in records if r["loop"] == "callbacks" and r["failed"]})
    lines = ["## Findings: the real gaps", ""]
    shown = sorted({g[0] for g in gaps} | ({"callbacks"} if unlisted else set()),
                   key=lambda x: LOOPS.index(x) if x in LOOPS else 9)  # fmt: skip
    for loop in shown:
        lines.append(f"- **{loop}**{' (the drop-in)' if loop == 'callbacks' else ''}:")
        for g_loop, suite, e in gaps:
            if g_loop == loop:
                on = f" (Python {', '.join(e['pythons'])})" if "pythons" in e else ""
                lines.append(f"  - {suite}{on}, {_tests_of(e)}: {e['reason']}")
        if loop == "callbacks" and unlisted:
            suites = ", ".join(unlisted)
            lines.append(f"  - failures its suite's TOML does not class, in {suites}: listed"
                         " under that run's table below")  # fmt: skip
    if not shown:
        lines.append("No test of these suites fails for a gap in any loop.")
    return [*lines, ""]


def render() -> str:
    records = [json.loads(p.read_text()) | {"file": p.name} for p in sorted(RESULTS.glob("*.json"))]
    for r in records:
        r.setdefault("suite", r["file"].split("-")[0])
    lines = [
        "# Real projects' own test suites on the lab's asyncio loops",
        "",
        "Generated by `python -m tests.real_suites.report` from `reports/suites/*.json`, which",
        "`nox -s real-suites -- SUITE` writes: it downloads the suite's pinned sdist, runs its",
        "tests unmodified with `tests/real_suites/lab_loop.py` making every event loop the suite",
        "asks asyncio for, once per loop. Each expected failure has a class and a reason in",
        "`tests/real_suites/<suite>.toml`; the classes:",
        "",
        *(f"- `{name}`: {meaning}" for name, meaning in CLASSES.items()),
        "",
        '"loops made" counts the loops the suite got from the loop under test (a test that',
        "builds its own loop by name gets that one); a run of the drop-in or uvloop that made",
        'none fails the session. "deselected" are the parameters of a suite that bring their',
        "own loop (anyio's trio, uvloop and eager-factory backends), not run on the one under",
        'test. "Loops installed by": `loop_factory` is the routes Python 3.14+ keep (a',
        "replaced `asyncio.new_event_loop`, `IsolatedAsyncioTestCase.loop_factory`, the suite's",
        "own hook); `policy` is an event loop policy, set as well where it is not deprecated.",
        "",
    ]
    lines += _findings(records)
    suites = sorted({r["suite"] for r in records}, key=lambda s: [*SUITES].index(s))
    for suite in suites:
        lines += _suite_section(suite, [r for r in records if r["suite"] == suite])
    return "\n".join(lines)


def main() -> int:
    PAGE.write_text(render())
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
