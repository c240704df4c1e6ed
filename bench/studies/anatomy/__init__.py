"""The cost anatomy, declared: where an echo request's cost goes, counted per row in an untimed
repetition at echo's headline point (the method: this folder's README)."""

from __future__ import annotations

from bench.study import Option, SideStudy

# Its files under the results folder, by point: the fixed offered load's, the closed loop's
# (apart, so the two points never mix).
FILES = {False: "anatomy.json", True: "anatomy-closed.json"}

STUDY = SideStudy(
    name="anatomy",
    title="Cost anatomy",
    measuring="bench.studies.anatomy.measure",
    rendering="bench.studies.anatomy.render",
    options=(
        Option(
            ("--closed-loop",),
            (
                ("action", "store_true"),
                (
                    "help",
                    "anatomy: in the closed loop (each connection sends its next request as "
                    "soon as its echo is back) instead of at the fixed offered load; stored "
                    "apart, in anatomy-closed.json",
                ),
            ),
        ),
        Option(
            ("--counter",),
            (("choices", ("perf", "strace")), ("help", "anatomy: default, the first usable")),
        ),
    ),
    kept_if_stopped="the anatomy stores its rows at the end: none of this run is kept",
)
