"""Latency as the load rises, the running side: one step of one row is echo's fixed-load
repetition at the step's rate, measured and judged by echo's own code.

A fresh echo server, a warm-up and the measured load from the fixed-load generator
(:func:`bench.studies.echo.measure.measure`); whether the server kept the rate is the generator's
rule as echo records it, so the ladder and the fixed-load tables never judge a step two ways. Where
a row's climb stops is the declaration's (:mod:`bench.studies.latency`) and the runner's.
"""

from __future__ import annotations

from bench.studies.echo.measure import measure
from bench.study import Measuring

MEASURING = Measuring(measure=measure)
