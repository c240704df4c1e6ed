"""What every section of one report reads: :class:`Page`, handed to each study's rendering
side (:attr:`bench.study.Rendering.section`) and to every section of the page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.store import ResultStore
from machine.environment import describe
from machine.interpreters import REFERENCE

MODES = {"quick": "bench.md", "full": "bench-full.md"}  # each run's page
# What a side study's section says in place of its figures where they were measured on
# another machine than the page's (Page.own).
ELSEWHERE = (
    "Not set beside this page's figures: measured on another machine, or, where the stored "
    "results name none, shown on the run's main page only."
)


def machine_page(filename: str, index: int) -> str:
    """The run's page for its index-th machine: its main page first, then one per machine."""
    return filename if index == 0 else filename.replace(".md", f"-machine-{index}.md")


@dataclass(frozen=True)
class Page:
    """What every section of one report reads."""

    mode: str
    stores: dict[str, ResultStore | None]  # the main tables' interpreter's, by study
    out: Path
    chart_dir: Path
    points_of: Callable
    anatomy_data: dict | None
    results: Path | None  # where every interpreter's results are stored (None: only `stores`)
    python: str = REFERENCE  # the interpreter of the main tables
    # The one machine the page's figures come from (machine.environment.describe; None: the
    # stores name none): a side study's figures measured elsewhere are left off the page.
    machine: str | None = None

    @property
    def main(self) -> bool:
        """The run's main page (``MODES``), not one of another machine's figures."""
        return self.out.name == MODES[self.mode]

    def own(self, data: dict | None) -> dict | None:
        """A side study's stored figures if they belong on this page, else None: measured on
        its machine (their "environment"), or, naming none, on the run's main page, as a row
        whose session names no machine stays there (bench.store.per_machine)."""
        if not data or self.machine is None:
            return data
        env = data.get("environment")
        return data if (describe(env) == self.machine if env else self.main) else None
