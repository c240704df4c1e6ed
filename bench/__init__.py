"""The lab's bench: runs every measured configuration in fresh processes and renders reports.

Running and rendering are separate on purpose. ``python -m bench run`` measures (the server or
loop under test in one process, its peer in another, pinned to different cores where the
machine has them; warm-up, then repetitions) and stores each repetition as JSON data under
``reports/results/``. ``python -m bench report`` renders ``reports/bench.md`` and its charts
from that stored data alone, so a report can be re-rendered, reviewed or diffed without
re-running anything.

Modules: :mod:`bench.environment` (what the numbers were measured on), :mod:`bench.plan`
(the matrix: points and rows, from discovery), :mod:`bench.procs` (fresh, pinned processes),
one module per workload (:mod:`bench.echo`, :mod:`bench.sleep`, :mod:`bench.crawler`,
:mod:`bench.micro`) saying how one repetition is measured and which figures it yields,
:mod:`bench.store` (results as data, resume and skip), :mod:`bench.runner` (the loop over the
plan with a progress bar), :mod:`bench.report` and :mod:`bench.charts` (rendering).
"""
