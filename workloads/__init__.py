"""The lab's workloads: echo, sleep and crawler, each a CLI (``python -m workloads.<name>``).

Each workload is written once per programming style (``callbacks.py``, ``generators.py``,
``coroutines.py``, ``blocking.py``: same names, same structure, so a reader can diff them) and
gets its loop by discovery (``loops.get(name)``), never by importing one. Loop-free logic
(argument handling, plans, payloads, summaries, JSON) lives beside them;
:mod:`workloads.common` holds what every workload's CLI shares.
"""
