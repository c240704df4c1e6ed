"""The page kit: what every page and every study's rendering side is built from.

:mod:`~bench.render.rows` (a stored point's rows with their summaries and baselines),
:mod:`~bench.render.tables` (a point's table and its sentences), :mod:`~bench.render.charts`,
:mod:`~bench.render.intervals`, :mod:`~bench.render.drift`, :mod:`~bench.render.codesize` and
:mod:`~bench.render.page` (what a section reads). Nothing here runs a study, imports the running
code, or names a study: the pages (:mod:`bench.pages`) put it together.
"""
