"""Collects each case's outcome and renders the properties-by-variant matrix.

Outcomes: pass, FAIL, known deviation (a strict xfail from deviations.toml), not claimed
(the variant does not claim the capability the property needs). The same per-variant summary
is printed at the end of the pytest run.
"""

from __future__ import annotations

import platform
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from tabulate import tabulate

import loops
from conformance.harness import played_styles

SYMBOL = {"pass": "✅", "fail": "❌", "deviation": "⚠️", "not claimed": "·"}
STYLE_ABBREV = {"callbacks": "cb", "generators": "gen", "coroutines": "co", "asyncio": "aio"}
FAULTS = "faults_"
FAULTS_INTRO = [
    "# Faults",
    "",
    "The fault suite (`conformance/test_faults_*.py`): peers that reset, half-close, never read "
    "or crowd in; a server out of descriptors; a hostile site; code that raises, a task that "
    "will not be cancelled, an fd closed behind the loop's back, Ctrl-C; bad command lines; "
    "sockets closed behind a dup or reused while watched; bad arguments to every public call; "
    "a soak (its figures below). "
    "Most cases drive the real workload processes for each variant and style.",
    "",
]
# Findings the summary states in a sentence: property -> what it means for the loops that
# deviate from it ({deviating} and {holding} are filled in from the outcomes).
FINDINGS = {
    "deadlines.a_timeout_and_the_wake_up_it_guards_in_one_poll_end_one_way": (
        "**Data lost under a timeout:** on {deviating}, a byte that is already in the socket "
        "when a timeout around `recv` expires in the same poll is read into the timed-out wait "
        "(by the loop's reader callback, as asyncio's `loop.sock_recv` does) and dropped, so the "
        "caller gets `TimeoutError` and no later recv sees the byte; {holding} keep it (in the "
        "socket, or as the recv's result)."
    ),
    "cancellation.sock_recv_cancelled_at_any_moment_loses_no_byte": (
        "**Bytes lost by a cancelled `loop.sock_recv`:** on {deviating}, a thread's bytes read "
        "by the loop's reader callback into a wait that a timeout or a sibling cancels in the "
        "same turn are dropped (CPython issue 78976; `sock_recv_into` the same); {holding} keep "
        "every byte. Figures per interpreter: "
        "[findings-cancellation.md](findings-cancellation.md)."
    ),
    "cancellation.sock_accept_cancelled_at_any_moment_loses_no_connection": (
        "**Connections lost by a cancelled `loop.sock_accept`:** on {deviating}, a connection "
        "accepted by the loop's reader callback into a wait cancelled in the same turn is "
        "dropped; {holding} keep every connection "
        "([findings-cancellation.md](findings-cancellation.md))."
    ),
}
SUMMARY_HEADERS = [
    "variant",
    "properties holding",
    "pass",
    "fail",
    "known deviation",
    "not claimed",
]


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

    def counts(self, pids: set[str] | None = None) -> dict[str, Counter[str]]:
        """Outcome counts per variant, over all properties or just `pids`."""
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        for (pid, variant, _), outcome in self.outcomes.items():
            if pids is None or pid in pids:
                counts[variant][outcome] += 1
        return counts

    def summary_rows(self) -> list[list]:
        """One row per variant: its cases by outcome, and how many properties fully hold."""
        holding: Counter[str] = Counter()
        played: Counter[str] = Counter()
        by_property: dict[tuple[str, str], set[str]] = defaultdict(set)
        for (pid, variant, _), outcome in self.outcomes.items():
            by_property[(pid, variant)].add(outcome)
        for (_, variant), outcomes in by_property.items():
            if outcomes != {"not claimed"}:
                played[variant] += 1
                holding[variant] += outcomes <= {"pass"}
        return [
            [
                variant,
                f"{holding[variant]}/{played[variant]}",
                c["pass"],
                c["fail"],
                c["deviation"],
                c["not claimed"],
            ]
            for variant, c in sorted(self.counts().items())
        ] + [[v.name, v.summary, "", "", "", ""] for v in self._unavailable()]

    def _unavailable(self) -> list[loops.Variant]:
        """Selected variants that cannot run on this interpreter (each says why)."""
        return [v for v in self.config.lab_variants if not v.available]  # type: ignore[attr-defined]

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.outcomes:
            return
        terminalreporter.section("conformance by variant (cases)")
        terminalreporter.write_line(tabulate(self.summary_rows(), headers=SUMMARY_HEADERS))
        path = self.config.getoption("--matrix")
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(self.render())
            terminalreporter.write_line(f"matrix written to {path}")

    def _cell(self, pid: str, variant: loops.Variant) -> str:
        cells = [
            f"{STYLE_ABBREV[style]} {SYMBOL[self.outcomes[(pid, variant.name, style)]]}"
            for style in played_styles(variant)
            if (pid, variant.name, style) in self.outcomes
        ]
        return " ".join(cells) or "—"  # no scenario in a style this variant speaks

    def _findings(self) -> list[str]:
        """A sentence per finding whose property some variant deviates from."""
        lines = []
        for pid, sentence in FINDINGS.items():
            seen: dict[str, set[str]] = defaultdict(set)
            for (p, variant, _), outcome in self.outcomes.items():
                if p == pid:
                    seen[variant].add(outcome)
            deviating = sorted(v for v, o in seen.items() if "deviation" in o)
            holding = sorted(v for v, o in seen.items() if o == {"pass"})
            if deviating:
                named = [", ".join(f"`{v}`" for v in vs) or "none" for vs in (deviating, holding)]
                lines += [sentence.format(deviating=named[0], holding=named[1]), ""]
        return lines

    def _topic_summary(self, pids: set[str], variant: loops.Variant) -> str:
        c = self.counts(pids).get(variant.name, Counter())
        parts = [f"{c[o]}{SYMBOL[o]}" for o in ("pass", "fail", "deviation", "not claimed") if c[o]]
        return "**" + " ".join(parts) + "**" if parts else "—"

    def _soak_lines(self, variants: list[loops.Variant]) -> list[str]:
        """The soak's figures, a row per variant and style (conformance/test_faults_soak.py)."""
        if not self.soak:
            return []
        columns = sorted({name for figures in self.soak.values() for name in figures})
        rows = [
            [f"{variant.name} {STYLE_ABBREV[style]}", *[figures.get(c, "—") for c in columns]]
            for variant in variants
            for style in variant.styles
            if (figures := self.soak.get((variant.name, style)))
        ]
        size = self.config.getoption("--soak")
        return [
            "## Soak figures",
            "",
            f"Size `--soak {size}` (`nox -s conformance -- --soak full`: a million echo "
            "requests over 100 connections and 100 000 tasks per case). RSS growth is the "
            "process's resident memory at the end minus after warm-up (bound: 8 MiB); fds left "
            "counts descriptors open at the end that were not open after warm-up.",
            "",
            tabulate(rows, headers=["loop", *columns], tablefmt="github"),
            "",
        ]

    def render(self) -> str:
        variants = [v for v in self.config.lab_variants if v.available]  # type: ignore[attr-defined]
        # The fault suite's topics (test_faults_*.py) after the loop properties.
        properties = sorted(
            {pid for pid, _, _ in self.outcomes}, key=lambda pid: (pid.startswith(FAULTS), pid)
        )
        lines = [
            "# Conformance matrix",
            "",
            "Generated by `nox -s conformance` from the suite in `conformance/`; do not edit.",
            f"Python {platform.python_version()} on {platform.machine()}, commit {_commit()}.",
            "",
            f"{len(properties)} properties, each asserted once and played in every style a "
            "variant speaks. Each cell shows one result per style "
            "(cb = callbacks, gen = generators, co = coroutines, aio = asyncio's own API on "
            "the variant's asyncio loop): "
            "✅ pass, ❌ fail, ⚠️ known deviation (reason below), · not claimed, "
            "— no scenario in a style the variant speaks. "
            "The last row of each topic counts its cases per variant.",
            "",
        ]
        lines += [f"- **{v.name}** is {v.summary}" for v in self._unavailable()]
        if self._unavailable():
            lines.append("")
        by_topic: dict[str, list[str]] = defaultdict(list)
        for pid in properties:
            by_topic[pid.split(".", 1)[0]].append(pid)
        headers = ["property", *[v.name for v in variants]]
        for topic, pids in by_topic.items():
            if topic.startswith(FAULTS) and FAULTS_INTRO[0] not in lines:
                lines += FAULTS_INTRO
            rows = [[pid.split(".", 1)[1], *[self._cell(pid, v) for v in variants]] for pid in pids]
            rows.append(
                [f"**{topic}: cases**", *[self._topic_summary(set(pids), v) for v in variants]]
            )
            lines += [f"## {topic}", "", tabulate(rows, headers=headers, tablefmt="github"), ""]
        lines += self._soak_lines(variants)
        lines += [
            "## Summary by variant",
            "",
            "Properties holding = properties played (claimed, with a scenario in a style the "
            "variant speaks) that pass in every style; the other columns count cases "
            "(one per property and style).",
            "",
            tabulate(self.summary_rows(), headers=SUMMARY_HEADERS, tablefmt="github"),
            "",
            *self._findings(),
        ]
        if self.reasons:
            lines += ["## Known deviations", ""]
            for (pid, variant, style), reason in sorted(self.reasons.items()):
                lines.append(f"- **{variant}** `{pid}` ({style}): {reason}")
            lines.append("")
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
