"""Every finalizer in the home-made loops survives an object whose ``__init__`` never ran.

A signal's KeyboardInterrupt can land between any two lines of ``__init__`` (Ctrl-C while a
task is being made), and Python still calls ``__del__`` on the half-built object: a finalizer
that reads a field ``__init__`` had not reached yet prints an AttributeError traceback over
the user's clean Ctrl-C. The earliest cut, no field at all, is tested here for every class in
``loops/`` that defines ``__del__``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import loops


def classes_with_finalizers() -> list[type]:
    found = {}
    for module_info in pkgutil.walk_packages(loops.__path__, "loops."):
        if module_info.name.startswith("loops._template"):
            continue
        try:
            module = importlib.import_module(module_info.name)
        except ImportError:  # a reference loop not installed here: not ours anyway
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__.startswith("loops.") and "__del__" in vars(cls):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [found[name] for name in sorted(found)]


FINALIZED = classes_with_finalizers()


def test_the_finalizers_are_found():
    # The two the loops have today; a new one is picked up by the walk above.
    names = {cls.__qualname__ for cls in FINALIZED}
    assert {"_Unjoined", "_Unretrieved"} <= names


@pytest.mark.parametrize("cls", FINALIZED, ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_a_finalizer_survives_an_object_its_init_never_finished(cls):
    half_built = cls.__new__(cls)
    cls.__del__(half_built)  # raises if it reads a field __init__ never set
