"""The sleep workload: N sleepers with seeded random delays, on the loop under test.

    python -m workloads.sleep --loop NAME [--style S] --tasks N --max-delay S
        [--cancel F] [--seed N] [--json FILE]
    python -m workloads.sleep --loop NAME [--style S] --idle S [--idle-sockets N] [--json FILE]

Sleepers are tasks (generators, coroutines, blocking) or timers (callbacks), each sleeping a
delay drawn uniformly from [0, max-delay] (seeded: the same delays on every loop). Each records
its lateness on the loop's own clock: wake time minus the deadline it computed just before
asking to sleep (so the loop's own bookkeeping can only make it look later, never earlier).
``--cancel F`` picks a fraction F of the sleepers (seeded) and cancels each right after its
batch of 1 000 starts; a cancelled sleeper must never wake. ``--idle S`` instead runs one sleep
of S seconds while idle sockets (1 000, or ``--idle-sockets N``; the soft open-file limit is
raised within the hard one to fit them) are watched for reading, to measure what waiting costs
(CPU per wall second).

Prints a one-line summary. Exit status: 0 when no cancelled sleeper woke, no wake-up was early
by more than the loop clock's tick and no idle socket was reported readable; 1 otherwise (the
summary and the JSON say which); 2 for bad arguments; 130 when Ctrl-C stopped it (it says
so in one line, and whether every socket was closed).

JSON record (one flat object; times in seconds unless the name says otherwise):

- ``workload`` "sleep", ``mode`` "sleepers" or "idle", ``loop``, ``style``, ``tasks`` (1 in
  idle mode), ``max_delay_s`` (in idle mode: the idle sleep), ``cancel_fraction``, ``idle_s``
  (null unless idle), ``idle_sockets``, ``seed``
- ``wall_s``, ``cpu_s``: the whole run (loop creation to close); ``cpu_per_task_us``
- ``sleep_wall_s``, ``sleep_cpu_s``, ``cpu_per_wall_s``: from the moment every sleeper is
  asleep to the moment the last one woke (in idle mode: the idle CPU per wall second)
- ``woke``, ``cancelled``, ``cancel_too_late`` (chosen, but it had already woken or its deadline
  had passed, so it is left to wake: not a fault),
  ``woke_after_cancel`` (must be 0)
- ``lateness_min_s``, ``lateness_p50_s``, ``lateness_p99_s``, ``lateness_max_s``,
  ``lateness_mean_s``
- ``clock_tick_s``: the loop clock's smallest observed step (1e-3 on uvloop's libuv clock);
  ``early_wakeups``: wake-ups before their deadline on the loop's clock; ``early_beyond_tick``:
  those early by more than one tick, i.e. early beyond doubt (must be 0)
- ``unexpected_reads``: idle sockets reported readable (must be 0)
- ``peak_rss_mib``: the process's peak resident memory
- ``ok``: the three "must" conditions above hold
"""
