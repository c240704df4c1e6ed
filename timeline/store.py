"""Where records are stored, and how they are written and read back (plain JSON).

The report (:mod:`timeline.render`) and the HTML site read records through this module and
:mod:`timeline.readings`, never through :mod:`timeline.observe`, which runs scenarios under the
tracer: observing and rendering are separate rooms, as the bench's measuring and rendering are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STORE = Path("reports/timelines")  # the records, their charts and the failures file
REPORT = Path("reports/timelines.md")
FAILURES = "failures.json"  # in the store: the runs that did not record, and why


def save(record: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def load_all(store: Path) -> list[dict[str, Any]]:
    """Every record in the store, in file-name order."""
    return [load(p) for p in sorted(store.glob("*.json")) if p.name != FAILURES]


def load_failures(store: Path) -> dict[str, str]:
    """The runs that did not record, by name, each with why ({} if none is stored)."""
    path = store / FAILURES
    return json.loads(path.read_text()) if path.exists() else {}


def save_failures(store: Path, failures: dict[str, str]) -> None:
    (store / FAILURES).write_text(json.dumps(failures, indent=1, sort_keys=True) + "\n")
