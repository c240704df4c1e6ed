"""Instructions per echo request, declared: every echo row counted under callgrind in the closed
loop and at a fixed load, and the profile by part (the method: this folder's README)."""

from __future__ import annotations

from bench.study import Option, SideStudy

FILE = "instructions.json"  # every echo row's count, both regimes, under the results folder
PROFILE_FILE = "profile.json"  # one loop's count by part (profile.py), beside it

STUDY = SideStudy(
    name="instructions",
    title="Instructions per request",
    measuring="bench.studies.instructions.measure",
    rendering="bench.studies.instructions.render",
    options=(
        Option(
            ("--regime",),
            (
                ("action", "append"),
                ("choices", ("closed", "paced")),
                ("help", "instructions: only this regime (repeat)"),
            ),
        ),
    ),
)
