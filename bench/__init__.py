"""The lab's bench: runs every measured configuration in fresh processes and renders reports.

Running and rendering are separate rooms. ``python -m bench run`` measures (the server or loop
under test in one process, its peer in another, pinned to different cores where the machine
has them; warm-up, then repetitions) and stores each repetition as JSON data under
``reports/results/``. ``python -m bench report`` renders ``reports/bench.md`` and its charts
from that stored data alone, and never imports the running code.

A thin core (:mod:`bench.plan`, :mod:`bench.study`, :mod:`bench.registry`,
:mod:`bench.store`, :mod:`bench.fingerprint`, :mod:`bench.summary`, :mod:`bench.runner`,
:mod:`bench.procs`, the page kit :mod:`bench.render`) under a folder per study
(:mod:`bench.studies`), with the pages over both (:mod:`bench.pages`). ``bench/README.md`` maps
every file of the core and links each study's README.
"""
