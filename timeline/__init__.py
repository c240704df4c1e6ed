"""Timelines: watch every loop schedule the same small programs, from outside.

The bench measures what a design costs; this package shows what it does. It reaches loops only
through discovery (``loops.discover()``, ``loops.get()``) and edits none of them:

- :mod:`timeline.tracer`: a driver around each task and a proxy around each callbacks loop
  record run slices and what each task waited on; nothing is installed unless tracing.
- :mod:`timeline.scenarios`: the programs, the same on every loop, one file section per style.
- :mod:`timeline.observe`: plays a scenario under the tracer; the run becomes a record.
- :mod:`timeline.store`: where records are stored as JSON, and reading them back.
- :mod:`timeline.readings`: what the report reads off one record (order, figures, time unit).
- :mod:`timeline.render`: charts and ``reports/timelines.md``, from stored records alone
  (through :mod:`timeline.store` and :mod:`timeline.readings`: rendering never loads the
  tracer).
- :mod:`timeline.traceevents`: a record as trace-event JSON (Perfetto, chrome://tracing).

``python -m timeline --help`` runs one (``--loop --style --scenario --json --out``) or all.
"""
