"""The reproductions, declared: echo's headline point's key rows measured again in a new
session, each ratio said to land inside its committed interval or not (the method: this
folder's README)."""

from __future__ import annotations

from bench.study import SideStudy

FILE = "reproductions.json"  # every new session's outcome, appended, under the results folder

STUDY = SideStudy(
    name="reproductions",
    title="Reproductions",
    measuring="bench.studies.reproductions.measure",
    rendering="bench.studies.reproductions.render",
)
