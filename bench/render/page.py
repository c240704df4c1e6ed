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

    def holds(self, env: dict | None) -> bool:
        """True where figures measured in `env` belong on this page: its machine's (or either
        side names none)."""
        return self.machine is None or not env or describe(env) == self.machine
