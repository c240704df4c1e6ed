"""What every section of one report reads: :class:`Page`, handed to each study's rendering
side (:attr:`bench.study.Rendering.section`) and to every section of the page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.store import ResultStore
from machine.interpreters import REFERENCE

MODES = {"quick": "bench.md", "full": "bench-full.md"}  # each run's page


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
