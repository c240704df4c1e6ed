"""Timelines: watch every loop schedule the same small programs, from outside.

The bench measures what a design costs; this package shows what it does. It reaches loops only
through discovery (``loops.discover()``, ``loops.get()``) and edits none of them:

- :mod:`timeline.tracer`: a driver around each task and a proxy around each callbacks loop
  record run slices and what each task waited on; nothing is installed unless tracing.
- :mod:`timeline.scenarios`: the programs, the same on every loop, one file section per style.
- :mod:`timeline.record`: a traced run becomes a record (plain data, stored as JSON).
- :mod:`timeline.records`: where records are stored, and the readings the report makes of one.
- :mod:`timeline.render`: charts and ``reports/timelines.md``, from stored records alone
  (through :mod:`timeline.records`: rendering never loads the tracer).

``python -m timeline --help`` runs one (``--loop --style --scenario --json --out``) or all.
"""
