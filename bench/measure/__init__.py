"""The running side of each workload, and the cost anatomy's syscall counting.

Loaded only by ``python -m bench run`` and ``python -m bench anatomy``, never by the report:
a workload's registration names its module here (:attr:`bench.workload.Workload.running`) and
the runner imports it; nothing in :mod:`bench.registry` imports this package. Each module holds
how one repetition of its workload is measured (the processes it starts, the figures it records);
:mod:`bench.measure.micro` and :mod:`bench.measure.pyperf_micro` are also the CLIs the micro
workload's repetitions run.
"""
