"""completions: TODO, one paragraph: the idea, what it builds on, its limits."""

from loops.contract import Variant

from . import tasks

VARIANT = Variant(
    name="completions",
    summary="TODO: one line, shown in the README table and the reports",
    lineage="TODO: the idea and where it comes from",
    # Claim what passes; see loops.contract.CAPABILITIES for the names.
    capabilities=frozenset({"core"}),
    coroutines=tasks,
)
