"""The suite's results as data, and what a reader needs first from them: findings by severity.

A conformance run stores every case's outcome in ``reports/results/conformance/python-X.Y.json``
(:class:`Results`, one file per interpreter), beside the matrix it renders. Everything a page
says about conformance is computed here from those files, so the matrix, the bench's pages and
the HTML site read one set of figures:

- :func:`findings`: every property some variant deviates from (or fails), worst first, with
  the loops affected, whether the other interpreters' stored runs agree, and the command that
  plays it again. The severity of each is declared in ``conformance/severities.toml``.
- :func:`style_counts`: per variant and style, the properties that hold and the ones played:
  the counts the bench's glance shows beside each row.

This module reads data only (no pytest, no loop is run), so a renderer may import it.
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

SEVERITIES = Path(__file__).resolve().parent / "severities.toml"
FORMAT = 1  # the stored results' format; a reader refuses another
OUTCOMES = ("pass", "fail", "deviation", "not claimed")
PLAYED = ("pass", "fail", "deviation")  # outcomes of a case the variant claims
UNEXPLAINED = "fails"  # the severity of a failing case: no deviation explains it
UNRANKED = "unranked"  # a deviation whose property severities.toml does not rank


def results_path(folder: Path, python: str) -> Path:
    """Where one interpreter's results live in a results folder (python: 'X.Y')."""
    return folder / f"python-{python}.json"


@dataclass
class Results:
    """One conformance run: each case's outcome, the deviations' reasons, what could not load."""

    python: str  # full version, e.g. 3.11.7
    machine: str
    commit: str
    outcomes: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (pid, v, style)
    reasons: dict[tuple[str, str, str], str] = field(default_factory=dict)  # deviations only
    unavailable: dict[str, str] = field(default_factory=dict)  # variant -> why

    @property
    def minor(self) -> str:
        return ".".join(self.python.split(".")[:2])

    def to_json(self) -> str:
        cases = [
            {"property": pid, "variant": variant, "style": style, "outcome": outcome}
            | (
                {"reason": self.reasons[key]}
                if (key := (pid, variant, style)) in self.reasons
                else {}
            )
            for (pid, variant, style), outcome in sorted(self.outcomes.items())
        ]
        data = {
            "format": FORMAT,
            "python": self.python,
            "machine": self.machine,
            "commit": self.commit,
            "unavailable": dict(sorted(self.unavailable.items())),
            "cases": cases,
        }
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Results:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise ValueError(f"conformance results of format {data.get('format')!r}, not {FORMAT}")
        results = cls(data["python"], data["machine"], data["commit"], {}, {}, data["unavailable"])
        for case in data["cases"]:
            key = (case["property"], case["variant"], case["style"])
            results.outcomes[key] = case["outcome"]
            if "reason" in case:
                results.reasons[key] = case["reason"]
        return results


def stored(folder: Path) -> dict[str, Results]:
    """Every interpreter's stored results in folder, by 'X.Y' (empty if none)."""
    found = {}
    for path in sorted(folder.glob("python-*.json")):
        results = Results.from_json(path.read_text())
        found[results.minor] = results
    return found


# --- severities ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Severities:
    """severities.toml: the scale, worst first, and each ranked property's entry."""

    order: tuple[str, ...]
    # property -> {"severity", "finding", optional "variants" and "findings" (by severity)}
    entries: dict[str, dict]

    def of(self, pid: str, variant: str) -> str:
        entry = self.entries.get(pid)
        if entry is None:
            return UNRANKED
        return entry.get("variants", {}).get(variant, entry["severity"])

    def rank(self, severity: str) -> int:
        """0 for an unexplained failure, then the scale's order; unranked last."""
        scale = (UNEXPLAINED, *self.order)
        return scale.index(severity) if severity in scale else len(scale)

    def harmful(self, severity: str) -> bool:
        """True for what costs a user something in use (not an API difference or a choice)."""
        return self.rank(severity) < self.rank("API difference")


def load_severities(path: Path = SEVERITIES) -> Severities:
    data = tomllib.loads(path.read_text())
    order = tuple(data["severities"])
    entries = {}
    for entry in data.get("finding", []):
        for severity in [entry["severity"], *entry.get("variants", {}).values()]:
            if severity not in order:
                raise ValueError(f"{path}: {entry['property']}: unknown severity {severity!r}")
        entries[entry["property"]] = entry
    return Severities(order, entries)


# --- findings ------------------------------------------------------------------------------


@dataclass
class Finding:
    """One property some loops deviate from (or fail) with one severity."""

    severity: str
    pid: str
    text: str
    affected: dict[str, list[str]]  # variant -> styles
    elsewhere: dict[str, str]  # 'X.Y' -> what that interpreter's stored run says

    def command(self) -> str:
        """The command that plays this property again on the loops affected."""
        topic, name = self.pid.split(".", 1)
        loops = " ".join(f"--loop {variant}" for variant in sorted(self.affected))
        return f"python3 -m pytest conformance/test_{topic}.py::test_{name} {loops}"


def _deviating(results: Results, pid: str) -> set[tuple[str, str]]:
    return {
        (v, s)
        for (p, v, s), o in results.outcomes.items()
        if p == pid and o in ("deviation", "fail")
    }


def _measured(results: Results, pid: str) -> set[tuple[str, str]]:
    return {(v, s) for (p, v, s) in results.outcomes if p == pid}


def compare(here: Results, there: Results | None, pid: str) -> str:
    """Whether another interpreter's stored run deviates in the same (variant, style) cases."""
    if there is None:
        return "not measured"
    mine, theirs = _deviating(here, pid), _deviating(there, pid)
    both = _measured(here, pid) & _measured(there, pid)

    def absent(variants: set[str]) -> str:
        """Why these variants have no case there: unavailable (with the run's reason) or not run."""
        return ", ".join(
            f"{v} unavailable there" if v in there.unavailable else f"{v} not run there"
            for v in sorted(variants)
        )

    if not mine & both:  # none of the loops affected here was played there
        missing = {v for v, _ in mine}
        played_there = bool(_measured(there, pid))
        return f"not measured ({absent(missing)})" if missing and played_there else "not measured"
    only_here = sorted({v for v, s in (mine - theirs) & both})
    only_there = sorted({v for v, s in (theirs - mine) & both})
    parts = []
    if only_here:
        parts.append("holds there on " + ", ".join(only_here))
    if only_there:
        parts.append("deviates there also on " + ", ".join(only_there))
    # Loops that ran on one interpreter only (curio before 3.12, asyncio_eager from 3.12).
    not_there = {v for v, _ in mine - _measured(there, pid)}
    new_there = sorted({v for v, _ in theirs - _measured(here, pid)})
    if not_there:
        parts.append(absent(not_there))
    if new_there:
        parts.append("also " + ", ".join(new_there))
    if only_here or only_there:
        return "differs: " + "; ".join(parts)
    return "same" + (f" ({'; '.join(parts)})" if parts else "")


def findings(
    results: Results, severities: Severities, others: dict[str, Results | None]
) -> list[Finding]:
    """Every (property, severity) some variant deviates from or fails, worst first.

    others maps each other interpreter ('X.Y') to its stored results, or None if nothing is
    stored for it; each finding says what that run shows for its property.
    """
    grouped: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for (pid, variant, style), outcome in sorted(results.outcomes.items()):
        if outcome == "fail":
            grouped[UNEXPLAINED, pid][variant].append(style)
        elif outcome == "deviation":
            grouped[severities.of(pid, variant), pid][variant].append(style)
    found = []
    for (severity, pid), affected in grouped.items():
        entry = severities.entries.get(pid, {})
        # A variant ranked apart (`variants`) may have its own sentence for that severity.
        text = entry.get("findings", {}).get(severity, entry.get("finding", ""))
        text = text if severity != UNEXPLAINED else ""
        elsewhere = {python: compare(results, other, pid) for python, other in others.items()}
        found.append(Finding(severity, pid, text, dict(affected), elsewhere))
    return sorted(found, key=lambda f: (severities.rank(f.severity), f.pid))


# --- counts --------------------------------------------------------------------------------


def style_counts(results: Results) -> dict[tuple[str, str], tuple[int, int]]:
    """(variant, style) -> (properties passing, properties played) in that style.

    Played means claimed with a scenario in that style (pass, fail or known deviation); a
    known deviation counts as not holding. These are the counts the bench's glance shows.
    """
    counts: dict[tuple[str, str], list[int]] = {}
    for (_, variant, style), outcome in results.outcomes.items():
        if outcome in PLAYED:
            tally = counts.setdefault((variant, style), [0, 0])
            tally[0] += outcome == "pass"
            tally[1] += 1
    return {key: (passing, played) for key, (passing, played) in sorted(counts.items())}


def variant_counts(results: Results) -> dict[str, tuple[int, int]]:
    """variant -> (properties holding in every style played, properties played)."""
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for (pid, variant, _), outcome in results.outcomes.items():
        seen[pid, variant].add(outcome)
    holding: Counter[str] = Counter()
    played: Counter[str] = Counter()
    for (_, variant), outcomes in seen.items():
        if outcomes & set(PLAYED):
            played[variant] += 1
            holding[variant] += outcomes <= {"pass", "not claimed"}
    return {variant: (holding[variant], played[variant]) for variant in sorted(played)}


def severity_counts(results: Results, severities: Severities) -> dict[str, Counter[str]]:
    """variant -> how many of its properties deviate (or fail) at each severity."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for finding in findings(results, severities, {}):
        for variant in finding.affected:
            counts[variant][finding.severity] += 1
    return counts
