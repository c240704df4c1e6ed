"""The running side of each workload, and the cost anatomy's syscall counting.

Its modules are loaded only by ``python -m bench run`` and ``python -m bench anatomy``: a
workload's registration names its module here (:attr:`bench.workload.Workload.running`) and the
runner imports it; nothing in :mod:`bench.registry` imports this package. The report reads
their files, never runs them: their code is part of each row's fingerprint (finding the files
loads this face, which imports nothing). Each module holds how one repetition of its workload
is measured (the processes it starts, the figures it records); :mod:`bench.measure.micro` and
:mod:`bench.measure.pyperf_micro` are also the CLIs the micro workload's repetitions run.
"""
