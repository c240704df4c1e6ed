"""How a property is written: one assertion, one small scenario per style.

A property is a test function decorated with :func:`prop`. It asserts once, on what ``play()``
returns; the scenarios registered on it (``@test_x.callbacks``, ``@test_x.generators``,
``@test_x.coroutines``, ``@test_x.blocking``) produce that outcome in each style, side by side
in the same file. :func:`check_property` plays one property on any variant outside pytest's
parametrization. An example, and how the conftest turns properties into cases:
``conformance/README.md``.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loops import CAPABILITIES, STYLES, Variant

SUITE = Path(__file__).resolve().parent
# Besides the contract's styles, a property may be played through asyncio's own API
# (``@test_x.asyncio``: ``async def _(*args)`` run by ``asyncio.Runner(loop_factory=...)``) on
# every variant with ``VARIANT.asyncio_loop``: asyncio, asyncio_eager, uvloop and the
# callbacks loop's drop-in. Its deviations say ``styles = ["asyncio"]``.
ASYNCIO = "asyncio"
# And a property of structured concurrency through trio's names (``@test_x.nurseries``: ``async
# def _(co)`` run by ``co.run``) on every variant whose coroutines namespace offers them all
# (NURSERY_NAMES; today scopes and trio).
NURSERIES = "nurseries"
NURSERY_NAMES = ("open_nursery", "CancelScope", "move_on_after")
PLAYABLE = (*STYLES, ASYNCIO, NURSERIES)


def played_styles(variant: Variant) -> tuple[str, ...]:
    """The styles a property can be played in on variant: those it speaks, asyncio's API
    where it has an asyncio loop, and trio's names where its coroutines offer them."""
    co = variant.coroutines
    nurseries = co is not None and all(hasattr(co, name) for name in NURSERY_NAMES)
    return (
        *variant.styles,
        *((ASYNCIO,) if variant.asyncio_loop is not None else ()),
        *((NURSERIES,) if nurseries else ()),
    )


@dataclass
class Property:
    """What the conftest needs to know about one property."""

    needs: str
    timeout: float = 10.0  # seconds per case before pytest-timeout fails it
    scenarios: dict[str, Callable[..., Any]] = field(default_factory=dict)


def prop(
    needs: str = "core", *, timeout: float = 10.0
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a test as a conformance property needing capability `needs`."""
    if needs not in CAPABILITIES:
        raise ValueError(f"unknown capability {needs!r}; known: {sorted(CAPABILITIES)}")

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        spec = Property(needs=needs, timeout=timeout)
        test.lab_property = spec  # type: ignore[attr-defined]

        def register(style: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
            def add(scenario: Callable[..., Any]) -> Callable[..., Any]:
                spec.scenarios[style] = scenario
                return scenario

            return add

        for style in PLAYABLE:
            setattr(test, style, register(style))
        return test

    return decorate


@dataclass(frozen=True)
class Case:
    """One (variant, style) pair a property is played on."""

    variant: Variant
    style: str

    @property
    def id(self) -> str:
        return f"{self.variant.name}-{self.style}"

    @property
    def api(self) -> Any:
        if self.style == ASYNCIO:
            return self.variant.asyncio_loop
        if self.style == NURSERIES:
            return self.variant.coroutines
        return self.variant.api(self.style)


def play_scenario(case: Case, scenario: Callable[..., Any], *args: Any) -> Any:
    """Run one scenario in the case's style and return what it returns.

    callbacks: ``scenario(loop, *args)`` with a fresh loop, closed afterwards.
    generators and coroutines: ``co.run(scenario(co, *args))``.
    blocking: ``co.run(scenario, co, *args)``: the scenario is the first task.
    nurseries: as coroutines, on the variant's coroutines namespace.
    asyncio: ``scenario(*args)`` run by ``asyncio.Runner`` on a loop from the variant's
    ``asyncio_loop`` factory.
    """
    if case.style == ASYNCIO:
        with asyncio.Runner(loop_factory=case.api) as runner:
            return runner.run(scenario(*args))
    if case.style == "callbacks":
        loop = case.api()
        try:
            return scenario(loop, *args)
        finally:
            loop.close()
    co = case.api
    if case.style == "blocking":
        return co.run(scenario, co, *args)
    return co.run(scenario(co, *args))


def check_property(test: Callable[..., Any], variant: Variant, style: str) -> None:
    """Play property `test` on (variant, style) directly; its AssertionError propagates."""
    spec: Property = test.lab_property  # type: ignore[attr-defined]
    if style not in spec.scenarios:
        raise ValueError(f"{test.__name__} has no {style} scenario")
    case = Case(variant, style)
    test(play=lambda *args: play_scenario(case, spec.scenarios[style], *args))


def property_id(test: Callable[..., Any]) -> str:
    """'topic.name' for conformance/test_topic.py::test_name."""
    topic = test.__module__.rsplit(".", 1)[-1].removeprefix("test_")
    return f"{topic}.{test.__name__.removeprefix('test_')}"


def all_properties() -> dict[str, Callable[..., Any]]:
    """Every property of the suite by id, whatever pytest happens to collect this run."""
    found = {}
    for path in sorted(SUITE.glob("test_*.py")):
        module = importlib.import_module(f"conformance.{path.stem}")
        for test in vars(module).values():
            if callable(test) and hasattr(test, "lab_property"):
                found[property_id(test)] = test
    return found


def deviation_problems(variants: Iterable[Variant]) -> list[str]:
    """What is stale or wrong in the variants' deviations.toml files, one line each.

    A deviation must name an existing property, one the variant claims, in a style that both
    the variant speaks and the property has a scenario for; otherwise it excuses nothing.
    """
    properties = all_properties()
    problems = []
    for variant in variants:
        for deviation in variant.deviations:
            where = f"loops/{variant.name}/deviations.toml: {deviation.property!r}"
            test = properties.get(deviation.property)
            if test is None:
                problems.append(f"{where} names no property of the suite (renamed or removed?)")
                continue
            spec: Property = test.lab_property
            if spec.needs not in variant.capabilities:
                problems.append(f"{where} needs {spec.needs!r}, which the variant does not claim")
            played = set(deviation.styles) & set(played_styles(variant)) & spec.scenarios.keys()
            if not played:
                problems.append(
                    f"{where} covers styles {list(deviation.styles)}, none of which the "
                    "variant speaks and the property plays"
                )
    return problems
