"""The lab's loops: discovery of variant folders and the contract they follow.

A variant is a folder ``loops/<name>/`` (a name not starting with ``_``) whose ``__init__.py``
defines ``VARIANT`` (see :mod:`loops.contract`), with an optional ``deviations.toml`` of known
deviations from conformance properties. Nothing else lists the variants: adding a folder adds a
variant everywhere (the suite, the workloads, the bench, the reports). ``python -m loops``
lists every entry of ``loops/`` by kind, as ``loops/README.md`` does.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import pkgutil
import tomllib
from dataclasses import replace
from pathlib import Path

from loops.contract import (
    CAPABILITIES,
    EVERY_CAPABILITY,
    HOME_MADE,
    PYTHON,
    REFERENCE,
    REFERENCE_DOCSTRING,
    STYLES,
    TASK_CAPABILITIES,
    Deviation,
    Unavailable,
    Variant,
    check_nonblocking,
    requires,
)

__all__ = [
    "CAPABILITIES",
    "EVERY_CAPABILITY",
    "HOME_MADE",
    "PYTHON",
    "REFERENCE",
    "STYLES",
    "TASK_CAPABILITIES",
    "Deviation",
    "Unavailable",
    "UnavailableVariantError",
    "UnknownVariantError",
    "Variant",
    "VariantLookupError",
    "available",
    "check_nonblocking",
    "discover",
    "get",
    "requires",
]

# LAB_EXTRA_LOOPS (directories separated by os.pathsep) adds folders of variants kept outside
# the tree, which is how the lab's own tests try a throw-away variant.
for _extra in filter(None, os.environ.get("LAB_EXTRA_LOOPS", "").split(os.pathsep)):
    if _extra not in __path__:
        __path__.append(_extra)


class VariantLookupError(LookupError):
    """A loop name that cannot be run here: unknown, or unavailable (the message says which)."""

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownVariantError(VariantLookupError):
    """A loop name that no folder under loops/ defines."""


class UnavailableVariantError(VariantLookupError):
    """A variant whose folder says it cannot run here; the message carries its reason."""


def _variant_names() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.iter_modules(__path__)
        if info.ispkg and not info.name.startswith("_")
    )


# A folder that cannot run here (a dependency that does not import on this interpreter, a
# kernel feature the machine lacks) raises Unavailable from its __init__.py: discovery keeps it
# as an unavailable variant (no styles, the one-line reason), which every consumer shows, and
# get() raises UnavailableVariantError naming the reason. Any other error in a folder is a bug
# in it, and discovery lets it through. An adapter's docstring opens with "Reference:", so even
# an unavailable one keeps its kind.
def _load(name: str) -> Variant:
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except Unavailable as why:
        return Variant.unavailable_here(name, str(why), reference=_says_reference(name))
    variant = getattr(module, "VARIANT", None)
    if not isinstance(variant, Variant):
        raise TypeError(f"loops/{name}/__init__.py must define VARIANT = loops.Variant(...)")
    if variant.name != name:
        raise ValueError(f"loops/{name}/ defines VARIANT.name = {variant.name!r}; use {name!r}")
    return replace(
        variant, deviations=_deviations(Path(module.__file__).parent / "deviations.toml")
    )


def _docstring(path: Path) -> str:
    """A module's docstring, read without running it ("" if it has none)."""
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def _says_reference(name: str) -> bool:
    """Whether the folder's ``__init__.py`` says it is a reference adapter (its first word)."""
    spec = importlib.util.find_spec(f"{__name__}.{name}")
    origin = Path(spec.origin) if spec and spec.origin else None
    return bool(origin) and _docstring(origin).startswith(REFERENCE_DOCSTRING)


def _deviations(path: Path) -> tuple[Deviation, ...]:
    if not path.exists():
        return ()
    entries = tomllib.loads(path.read_text()).get("deviation", [])
    return tuple(
        Deviation(
            property=entry["property"],
            reason=entry["reason"],
            styles=tuple(entry.get("styles", STYLES)),
            strict=entry.get("strict", True),
        )
        for entry in entries
    )


_cache: dict[str, Variant] = {}


def discover() -> dict[str, Variant]:
    """Every variant folder under loops/, by name, in name order, unavailable ones included."""
    for name in _variant_names():
        if name not in _cache:
            _cache[name] = _load(name)
    return {name: _cache[name] for name in _variant_names()}


def available() -> dict[str, Variant]:
    """The variants that can run here: what a consumer that runs loops iterates."""
    return {name: variant for name, variant in discover().items() if variant.available}


def get(name: str) -> Variant:
    """The variant called name; UnknownVariantError listing the known ones, or
    UnavailableVariantError with the reason it cannot run here."""
    names = _variant_names()
    if name not in names:
        raise UnknownVariantError(
            f"unknown loop {name!r}; known loops: {', '.join(names) or '(none)'}"
        )
    if name not in _cache:
        _cache[name] = _load(name)
    variant = _cache[name]
    if not variant.available:
        raise UnavailableVariantError(
            f"loop {name!r} is unavailable on Python {PYTHON}: {variant.unavailable}"
        )
    return variant
