"""The registry: every study the bench measures and the report renders, in report order.

A study is a folder here: its declaration (the package: data), its running side and its
rendering side, which the declaration names and the core loads by name. Adding one is its
folder and one line below (``bench/README.md``'s recipe); the runner, the store and the pages
look studies up here at call time, so a test may register one of its own for its length.
"""

from __future__ import annotations

from bench.studies import (
    anatomy,
    connections,
    crawler,
    echo,
    http,
    instructions,
    latency,
    micro,
    reproductions,
    sleep,
)
from bench.study import SideStudy, Study

# The studies measured point by point by ``python -m bench run``, each a section of tables.
STUDIES: tuple[Study, ...] = (
    echo.STUDY,
    latency.STUDY,
    sleep.STUDY,
    connections.STUDY,
    crawler.STUDY,
    http.STUDY,
    micro.STUDY,
)
# The side studies, measured row by row at echo's headline point by ``run --study NAME``.
SIDES: tuple[SideStudy, ...] = (anatomy.STUDY, instructions.STUDY, reproductions.STUDY)


def names() -> list[str]:
    """The names of the studies measured point by point, in report order."""
    return [study.name for study in STUDIES]


def get(name: str) -> Study | SideStudy:
    """The registered study of that name (LookupError if there is none)."""
    for study in (*STUDIES, *SIDES):
        if study.name == name:
            return study
    known = ", ".join([*names(), *(side.name for side in SIDES)])
    raise LookupError(f"no study {name!r}; registered: {known}")
