"""The rendering room: reports/bench.md (and bench-full.md) and their charts, from stored data.

Nothing here runs a workload or imports the running code (:mod:`bench.runner`,
:mod:`bench.procs`, :mod:`bench.measure`). :func:`render_all` is the face; the rest:
:mod:`~bench.render.report` (the page, section by section), :mod:`~bench.render.rows` (a stored
point's rows with their summaries and baselines), :mod:`~bench.render.tables` (a point's table
and its sentences), :mod:`~bench.render.charts`, :mod:`~bench.render.glance`,
:mod:`~bench.render.scale`, :mod:`~bench.render.codesize`, :mod:`~bench.studies.anatomy.render` and
:mod:`~bench.studies.latency.render` (the latency ladder's section, which the site draws too).
"""


def __getattr__(name: str):
    # Lazily, so that `python -m bench.render.codesize` (or any one room) runs without the
    # whole report loaded before it.
    if name == "render_all":
        from bench.render.report import render_all

        return render_all
    raise AttributeError(name)


__all__ = ["render_all"]
