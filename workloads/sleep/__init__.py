"""The sleep workload: N sleepers with seeded random delays, on the loop under test.

    python -m workloads.sleep --loop NAME [--style S] --tasks N --max-delay S
        [--cancel F] [--seed N] [--json FILE]
    python -m workloads.sleep --loop NAME [--style S] --idle S [--idle-sockets N] [--json FILE]

Sleepers are tasks (generators, coroutines, blocking) or timers (callbacks); each records its
lateness on the loop's own clock. ``--idle`` measures what waiting costs instead. What lateness
means, the exit status and the JSON record: ``workloads/README.md``.
"""
