"""Collects each case's outcome, stores it as data and renders reports/conformance.md.

Outcomes: pass, FAIL, known deviation (a strict xfail from deviations.toml), not claimed
(the variant does not claim the capability the property needs). A run with ``--matrix PATH``
stores its outcomes in ``<PATH's folder>/results/conformance/python-X.Y.json`` (or where
``--outcomes`` says) and renders the page from them: the findings first (each known deviation
ranked by the severity ``conformance/severities.toml`` declares, with the loops affected and
what the other interpreters' stored runs show), then the counts per variant and per style,
then the properties-by-variant matrices, each ⚠️ linking to its reason. The per-variant
summary is also printed at the end of the pytest run.
"""

from __future__ import annotations

import platform
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from tabulate import tabulate

import loops
from conformance import findings as found
from conformance import test_faults_soak as soak_case  # the soak's sizes, declared there
from conformance.findings import Results, Severities
from conformance.harness import played_styles
from machine.interpreters import PYTHONS  # the interpreters the lab supports, declared once

SYMBOL = {"pass": "✅", "fail": "❌", "deviation": "⚠️", "not claimed": "·"}
# Every style the suite plays (conformance.harness.PLAYABLE), its cell mark and its meaning.
STYLES_SHOWN = {
    "callbacks": ("cb", "callbacks"),
    "generators": ("gen", "generators"),
    "coroutines": ("co", "coroutines"),
    "blocking": ("blk", "blocking"),
    "asyncio": ("aio", "asyncio's own API on the variant's asyncio loop"),
    "nurseries": (
        "nur",
        "trio's names for nurseries and cancel scopes, where a variant offers them",
    ),
}
STYLE_ABBREV = {style: mark for style, (mark, _) in STYLES_SHOWN.items()}
FAULTS = "faults_"
FAULTS_INTRO = [
    "## Faults",
    "",
    "The fault suite (`conformance/test_faults_*.py`): peers that reset, half-close, never read "
    "or crowd in; a server out of descriptors; a hostile site; code that raises, a task that "
    "will not be cancelled, an fd closed behind the loop's back, Ctrl-C; bad command lines; "
    "sockets closed behind a dup or reused while watched; bad arguments to every public call; "
    "a soak (its figures below). "
    "Most cases drive the real workload processes for each variant and style.",
    "",
]
SUMMARY_HEADERS = [
    "variant",
    "properties holding",
    "pass",
    "fail",
    "deviation: harmful",
    "deviation: API or by design",
    "not claimed",
]


def outcomes_folder(matrix: str | Path) -> Path:
    """Where a run that writes the matrix at `matrix` stores its outcomes by default."""
    return Path(matrix).parent / "results" / "conformance"


class MatrixRecorder:
    """A pytest plugin: remembers (property, variant, style) -> outcome."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.outcomes: dict[tuple[str, str, str], str] = {}
        self.reasons: dict[tuple[str, str, str], str] = {}
        self.keys: dict[str, tuple[str, str, str]] = {}
        self.soak: dict[tuple[str, str], dict] = defaultdict(dict)  # (variant, style) -> figures

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            mark = item.get_closest_marker("lab")
            if mark is not None:
                self.keys[item.nodeid] = (
                    mark.kwargs["property"],
                    mark.kwargs["variant"],
                    mark.kwargs["style"],
                )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        key = self.keys.get(report.nodeid)
        if key is None:
            return
        for name, value in report.user_properties:
            if name == "soak":  # figures a soak recorded (test_faults_soak.py)
                self.soak[key[1], key[2]].update(value)
        if report.failed:
            self.outcomes[key] = "fail"
        elif hasattr(report, "wasxfail"):  # xfailed, or a non-strict deviation that passed
            self.outcomes[key] = "deviation"
            self.reasons[key] = report.wasxfail
        elif report.skipped:
            self.outcomes.setdefault(key, "not claimed")
        elif report.when == "call" and key not in self.outcomes:
            self.outcomes[key] = "pass"

    def results(self) -> Results:
        """This run as data (what the JSON file stores and every page is rendered from)."""
        variants = self.config.lab_variants  # type: ignore[attr-defined]
        return Results(
            python=platform.python_version(),
            machine=platform.machine(),
            commit=_commit(),
            outcomes=dict(self.outcomes),
            reasons=dict(self.reasons),
            unavailable={v.name: v.summary for v in variants if not v.available},
        )

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.outcomes:
            return
        results = self.results()
        severities = found.load_severities()
        terminalreporter.section("conformance by variant (cases)")
        terminalreporter.write_line(
            tabulate(summary_rows(results, severities), headers=SUMMARY_HEADERS)
        )
        path = self.config.getoption("--matrix")
        folder = self.config.getoption("--outcomes") or (path and outcomes_folder(path))
        if folder:
            stored = found.results_path(Path(folder), results.minor)
            stored.parent.mkdir(parents=True, exist_ok=True)
            stored.write_text(results.to_json())
            terminalreporter.write_line(f"outcomes stored in {stored}")
        if path:
            others = other_interpreters(results, Path(folder)) if folder else {}
            variants = [v for v in self.config.lab_variants if v.available]  # type: ignore[attr-defined]
            text = render(
                results,
                variants,
                others=others,
                severities=severities,
                soak=self.soak,
                soak_size=self.config.getoption("--soak"),
            )
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
            terminalreporter.write_line(f"matrix written to {path}")


def other_interpreters(results: Results, folder: Path) -> dict[str, Results | None]:
    """Each other supported interpreter's stored results (None where none are stored)."""
    stored = found.stored(folder)
    return {python: stored.get(python) for python in PYTHONS if python != results.minor}


# --- the page ------------------------------------------------------------------------------


def summary_rows(results: Results, severities: Severities) -> list[list]:
    """One row per variant: properties holding, its cases by outcome, deviations by kind."""
    holding = found.variant_counts(results)
    cases: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (pid, variant, _), outcome in results.outcomes.items():
        if outcome == "deviation":
            harmful = severities.harmful(severities.of(pid, variant))
            outcome = "harmful" if harmful else "benign"
        cases[variant][outcome] += 1
    rows = []
    for variant, c in sorted(cases.items()):
        passing, played = holding.get(variant, (0, 0))
        rows.append(
            [
                variant,
                f"{passing}/{played}",
                c["pass"],
                c["fail"],
                c["harmful"],
                c["benign"],
                c["not claimed"],
            ]
        )
    return rows + [[name, why, "", "", "", "", ""] for name, why in results.unavailable.items()]


def deviation_id(variant: str, pid: str) -> str:
    """The id of one variant's reason for one property in the Known deviations list."""
    return f"deviation-{variant}-{pid}".replace(".", "-").replace("_", "-")


def _cell(results: Results, pid: str, variant: loops.Variant) -> str:
    cells = []
    for style in played_styles(variant):
        outcome = results.outcomes.get((pid, variant.name, style))
        if outcome is None:
            continue
        text = f"{STYLE_ABBREV[style]} {SYMBOL[outcome]}"
        if outcome == "deviation":  # the whole "co ⚠️" is the link, so the cell still reads so
            text = f"[{text}](#{deviation_id(variant.name, pid)})"
        cells.append(text)
    return " ".join(cells) or "—"  # no scenario in a style this variant speaks


def _topic_summary(results: Results, pids: set[str], variant: loops.Variant) -> str:
    c: dict[str, int] = defaultdict(int)
    for (pid, name, _), outcome in results.outcomes.items():
        if pid in pids and name == variant.name:
            c[outcome] += 1
    parts = [f"{c[o]}{SYMBOL[o]}" for o in ("pass", "fail", "deviation", "not claimed") if c[o]]
    return "**" + " ".join(parts) + "**" if parts else "—"


def _findings_lines(findings: list[found.Finding], others: list[str]) -> list[str]:
    """The page's opening: every finding, worst first, as one table."""
    if not findings:
        return ["## Findings", "", "No variant deviates from or fails any property.", ""]
    rows = []
    for f in findings:
        affected = ", ".join(
            f"[{variant}](#{deviation_id(variant, f.pid)}) "
            + "/".join(STYLE_ABBREV[s] for s in styles)
            for variant, styles in sorted(f.affected.items())
        )
        what = f.text or "fails with no known deviation to explain it"
        rows.append(
            [
                f"**{f.severity}**",
                f"{what} (`{f.pid}`)",
                affected,
                *[f.elsewhere[python] for python in others],
                f"`{f.command()}`",
            ]
        )
    headers = ["severity", "finding (property)", "loops affected", *others, "reproduce"]
    counts: dict[str, int] = defaultdict(int)
    for f in findings:
        counts[f.severity] += 1
    tally = ", ".join(f"{n} {severity}" for severity, n in counts.items())
    return [
        "## Findings",
        "",
        f"Every property a loop deviates from, worst first ({tally}). Severities are declared "
        "in `conformance/severities.toml`; a loop links to its reason. "
        + (
            f"The {' and '.join(others)} columns compare the stored run of that interpreter "
            "(`reports/results/conformance/`); *not measured*: none is stored."
            if others
            else ""
        ),
        "",
        tabulate(rows, headers=headers, tablefmt="github"),
        "",
    ]


def _style_lines(results: Results) -> list[str]:
    """Properties holding per variant and style: the counts bench.md's glance shows."""
    counts = found.style_counts(results)
    by_variant: dict[str, list[str]] = defaultdict(list)
    order = list(STYLE_ABBREV)  # the lab's styles, then asyncio's own API
    in_order = sorted(counts.items(), key=lambda item: order.index(item[0][1]))
    for (variant, style), (passing, played) in in_order:
        by_variant[variant].append(f"{STYLE_ABBREV[style]} {passing}/{played}")
    rows = [[variant, " · ".join(cells)] for variant, cells in sorted(by_variant.items())]
    return [
        "Per style (properties holding / played in that style; what bench.md shows per row):",
        "",
        tabulate(rows, headers=["variant", "holding / played, by style"], tablefmt="github"),
        "",
    ]


def _soak_lines(soak: dict, variants: list[loops.Variant], size: str) -> list[str]:
    """The soak's figures, a row per variant and style (conformance/test_faults_soak.py)."""
    if not soak:
        return []
    columns = sorted({name for figures in soak.values() for name in figures})
    rows = [
        [f"{variant.name} {STYLE_ABBREV[style]}", *[figures.get(c, "—") for c in columns]]
        for variant in variants
        for style in played_styles(variant)
        if (figures := soak.get((variant.name, style)))
    ]
    return [
        "## Soak figures",
        "",
        f"Size `--soak {size}` (`nox -s conformance -- --soak full`: "
        f"{soak_case.SIZES['full']['requests']:,} echo requests over {soak_case.CONNECTIONS} "
        f"connections and {soak_case.SIZES['full']['tasks']:,} tasks per case). RSS growth is the "
        "process's resident memory at the end minus after warm-up (bound: "
        f"{soak_case.RSS_BOUND // soak_case.MIB} MiB); fds left "
        "counts descriptors open at the end that were not open after warm-up.",
        "",
        tabulate(rows, headers=["loop", *columns], tablefmt="github"),
        "",
    ]


def _deviation_lines(results: Results, severities: Severities) -> list[str]:
    """Each variant's reason for each property it deviates from, with an id to link to."""
    if not results.reasons:
        return []
    grouped: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for (pid, variant, style), reason in sorted(results.reasons.items()):
        grouped[variant, pid][reason].append(style)
    lines = ["## Known deviations", ""]
    for (variant, pid), reasons in sorted(grouped.items()):
        severity = severities.of(pid, variant)
        for reason, styles in reasons.items():
            marked = "/".join(STYLE_ABBREV[s] for s in styles)
            lines.append(
                f'- <a id="{deviation_id(variant, pid)}"></a>**{variant}** `{pid}` '
                f"({marked}; *{severity}*): {reason}"
            )
    return [*lines, ""]


def render(
    results: Results,
    variants: list[loops.Variant],
    *,
    others: dict[str, Results | None],
    severities: Severities,
    soak: dict | None = None,
    soak_size: str = "ci",
) -> str:
    """reports/conformance.md from one run's results (and the other interpreters' stored)."""
    properties = sorted(
        {pid for pid, _, _ in results.outcomes}, key=lambda pid: (pid.startswith(FAULTS), pid)
    )
    by_topic: dict[str, list[str]] = defaultdict(list)
    for pid in properties:
        by_topic[pid.split(".", 1)[0]].append(pid)
    lines = [
        "# Conformance matrix",
        "",
        "Generated by `nox -s conformance` from the suite in `conformance/`; do not edit.",
        f"Python {results.python} on {results.machine}, commit {results.commit}. "
        "Contents: [findings](#findings), [summary](#summary-by-variant), "
        + ", ".join(f"[{topic}](#{topic.replace('_', '-')})" for topic in by_topic)
        + ", [known deviations](#known-deviations), "
        "[capabilities not claimed](#capabilities-not-claimed). "
        "Also: [bench](bench.md), [timelines](timelines.md), [README](../README.md).",
        "",
    ]
    lines += [f"- **{name}** is {why}" for name, why in results.unavailable.items()]
    if results.unavailable:
        lines.append("")
    others_order = sorted(others, key=lambda p: tuple(int(x) for x in p.split(".")))
    lines += _findings_lines(found.findings(results, severities, others), others_order)
    lines += [
        "## Summary by variant",
        "",
        "Properties holding = properties played (claimed, with a scenario in a style the "
        "variant speaks) that pass in every style; the other columns count cases "
        "(one per property and style); a harmful deviation is one ranked above *API difference*.",
        "",
        tabulate(summary_rows(results, severities), headers=SUMMARY_HEADERS, tablefmt="github"),
        "",
        *_style_lines(results),
        "## The matrix",
        "",
        f"{len(properties)} properties, each asserted once and played in every style a "
        "variant speaks. Each cell shows one result per style "
        "(" + ", ".join(f"{mark} = {meaning}" for mark, meaning in STYLES_SHOWN.values()) + "): "
        "✅ pass, ❌ fail, ⚠️ known deviation (a link to its reason), · not claimed, "
        "— no scenario in a style the variant speaks. "
        "The last row of each topic counts its cases per variant.",
        "",
    ]
    headers = ["property", *[v.name for v in variants]]
    for topic, pids in by_topic.items():
        if topic.startswith(FAULTS) and FAULTS_INTRO[0] not in lines:
            lines += FAULTS_INTRO
        rows = [[pid.split(".", 1)[1], *[_cell(results, pid, v) for v in variants]] for pid in pids]
        rows.append(
            [f"**{topic}: cases**", *[_topic_summary(results, set(pids), v) for v in variants]]
        )
        lines += [f"### {topic}", "", tabulate(rows, headers=headers, tablefmt="github"), ""]
    lines += _soak_lines(soak or {}, variants, soak_size)
    lines += _deviation_lines(results, severities)
    claims = [
        [v.name, ", ".join(sorted(loops.CAPABILITIES.keys() - v.capabilities)) or "—"]
        for v in variants
    ]
    lines += [
        "## Capabilities not claimed",
        "",
        tabulate(claims, headers=["variant", "not claimed"], tablefmt="github"),
        "",
    ]
    return "\n".join(lines)


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
