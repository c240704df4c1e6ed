"""The lab's bench: runs every measured configuration in fresh processes and renders reports.

Running and rendering are separate rooms. ``python -m bench run`` measures (the server or loop
under test in one process, its peer in another, pinned to different cores where the machine
has them; warm-up, then repetitions) and stores each repetition as JSON data under
``reports/results/``. ``python -m bench report`` renders ``reports/bench.md`` and its charts
from that stored data alone, and never imports the running code, so a report can be
re-rendered, reviewed or diffed without re-running anything.

The base, shared by both rooms: :mod:`bench.plan` (the vocabulary: rows, points, figures,
charts, and the names figures are read against), :mod:`bench.workload` (the workload protocol),
:mod:`bench.registry` (the registry: one module per workload), :mod:`bench.store` (results as
data), :mod:`bench.summary` (medians, validity, ratios), :mod:`machine.environment` (what the
numbers were measured on). Running: :mod:`bench.runner` (the walk over the points),
:mod:`bench.procs` (fresh, pinned processes) and :mod:`bench.measure` (one repetition per
workload, and the cost anatomy's syscall counting). Rendering: :mod:`bench.render`.
``bench/README.md`` maps every file and walks one repetition from ``nox -s bench`` to a row.
"""
