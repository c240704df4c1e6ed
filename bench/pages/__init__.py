"""The pages: reports/bench.md (and bench-full.md) and the READMEs' rendered blocks, from stored
data alone, reading across the studies (the verdict, the glance, scale, the interpreters).

Nothing here runs a study or imports the running code; each study's own part of a page comes from
its rendering side, looked up by its name (:func:`bench.pages.report.study_section`);
:func:`bench.pages.report.render_every_page` writes them all.
"""
