"""The lab's bench: runs every measured configuration in fresh processes and renders reports.

Running and rendering are separate on purpose. ``python -m bench run`` measures (the server or
loop under test in one process, its peer in another, pinned to different cores where the
machine has them; warm-up, then repetitions) and stores each repetition as JSON data under
``reports/results/``. ``python -m bench report`` renders ``reports/bench.md`` and its charts
from that stored data alone, so a report can be re-rendered, reviewed or diffed without
re-running anything.

Modules: :mod:`bench.environment` (what the numbers were measured on), :mod:`bench.plan`
(the vocabulary: points, rows from discovery, figures, charts), :mod:`bench.procs` (fresh,
pinned processes and what they used), one module per workload (:mod:`bench.echo`,
:mod:`bench.sleep`, :mod:`bench.crawler`, :mod:`bench.micro`, whose operations
:mod:`bench.pyperf_micro` times under pyperf) saying which points it has,
how one repetition is measured and which figures it yields, :mod:`bench.store` (results as
data, resume and skip), :mod:`bench.summary` (medians, validity, ratios), :mod:`bench.runner`
(the walk over the matrix with a progress bar), and for rendering :mod:`bench.report`,
:mod:`bench.charts`, :mod:`bench.codesize`, :mod:`bench.glance` (the table opening each report)
and :mod:`bench.scale` (cost per unit of work against N, with growth exponents).
"""
