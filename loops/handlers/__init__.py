"""handlers: the Python Cookbook's event-driven I/O (recipe 11.12), speaking callbacks.

Handler objects are asked every iteration whether they want to receive or send, and a plain
select() waits for the ones that do. See loop.py; README.md says what it teaches.
"""

from loops.contract import Variant

from . import loop

VARIANT = Variant(
    name="handlers",
    summary="Cookbook handler objects asked every iteration, plain select() (1024-fd ceiling)",
    lineage="Beazley & Jones, Python Cookbook 3rd ed., recipe 11.12 (EventHandler, ThreadPool)",
    capabilities=frozenset(
        {
            "core",
            "timer-fifo",
            "timer-compaction",
            "fairness",
            "exceptions",
            "interrupts",
            "io",
            "udp",
            "threads",
            "hygiene",
        }
    ),
    callbacks=loop.Loop,
)
