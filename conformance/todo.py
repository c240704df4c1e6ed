"""Tells the author of a new variant what to implement next.

A scaffolded variant (``nox -s new``) raises ``NotImplementedError("X() is not implemented
yet: ...")`` from every stub; this plugin counts, over the failed cases, which stub each failure
reached first, and prints them most needed first at the end of the run.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

STUB_MESSAGE = re.compile(
    r"NotImplementedError: (\S+\(\)) is not implemented yet: write it in (\S+)"
)


class ToImplementNext:
    """A pytest plugin: failures that reached a scaffold stub, counted by stub."""

    def __init__(self) -> None:
        self.needed: Counter[tuple[str, str]] = Counter()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            match = STUB_MESSAGE.search(report.longreprtext)
            if match:
                self.needed[match.groups()] += 1

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.needed:
            return
        terminalreporter.section("to implement next (failing cases that reached the stub)")
        for (stub, where), count in self.needed.most_common():
            terminalreporter.write_line(f"{count:5d}  {stub:<24} in {where}")
