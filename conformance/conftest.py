"""Parametrizes every property over discovered (variant, style) pairs and writes the matrix.

Options: ``--loop NAME`` (repeatable) narrows to variants; ``--matrix PATH`` writes the
properties-by-variant table (``nox -s conformance`` passes ``reports/conformance.md``);
``--outcomes DIR`` stores every case's outcome as JSON (by default beside the matrix, in
``results/conformance/``); ``--soak full`` runs the soak at full size (a million echoes,
100 000 tasks per case).
``--trace-tasks`` plays every scenario with the timelines' tracer wrapping each task and
callback (timeline/tracer.py), which must change nothing: the suite passes the same.
"""

from __future__ import annotations

import functools

import pytest

import loops
from conformance import matrix, todo
from conformance.harness import Case, deviation_problems, play_scenario, played_styles, property_id


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("lab")
    group.addoption(
        "--loop",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this variant (repeatable); an unknown name is an error",
    )
    group.addoption(
        "--soak",
        choices=("ci", "full"),
        default="ci",
        help="soak size (conformance/test_faults_soak.py): ci (default) or full, a million "
        "echo requests and 100 000 tasks per case",
    )
    group.addoption(
        "--matrix",
        metavar="PATH",
        default=None,
        help="write the conformance matrix (markdown) to PATH",
    )
    group.addoption(
        "--outcomes",
        metavar="DIR",
        default=None,
        help="store every case's outcome in DIR/python-X.Y.json (default with --matrix: "
        "results/conformance/ beside the matrix)",
    )
    group.addoption(
        "--trace-tasks",
        action="store_true",
        help="wrap every task and callback in the timelines' tracer (it must change nothing)",
    )


def _selected(config: pytest.Config) -> list[loops.Variant]:
    names = config.getoption("--loop")
    if not names:
        return list(loops.discover().values())
    try:
        return [loops.get(name) for name in names]
    except loops.VariantLookupError as error:  # unknown, or unavailable here (with why)
        raise pytest.UsageError(str(error)) from None


def _traced(variants: list[loops.Variant]) -> list[loops.Variant]:
    from timeline.tracer import Tracer, traced  # imported only when asked: no cost when off

    # A ring of slices: bounded memory, so the heap-growth properties measure the loop.
    tracer = Tracer(limit=64)
    return [traced(variant, tracer) for variant in variants]


def pytest_configure(config: pytest.Config) -> None:
    config.lab_variants = _selected(config)  # type: ignore[attr-defined]
    if config.getoption("--trace-tasks"):
        config.lab_variants = _traced(config.lab_variants)  # type: ignore[attr-defined]
    problems = deviation_problems(config.lab_variants)  # type: ignore[attr-defined]
    if problems:
        raise pytest.UsageError("stale known deviations:\n  " + "\n  ".join(problems))
    config.pluginmanager.register(matrix.MatrixRecorder(config), "lab-matrix")
    config.pluginmanager.register(todo.ToImplementNext(), "lab-todo")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    spec = getattr(metafunc.function, "lab_property", None)
    if spec is None:
        return
    pid = property_id(metafunc.function)
    params = []
    for variant in metafunc.config.lab_variants:  # type: ignore[attr-defined]
        for style in played_styles(variant):
            if style not in spec.scenarios:
                continue
            case = Case(variant, style)
            marks = [
                pytest.mark.lab(property=pid, variant=variant.name, style=style),
                pytest.mark.timeout(spec.timeout),
            ]
            if spec.needs not in variant.capabilities:
                marks.append(pytest.mark.skip(reason=f"not claimed: needs {spec.needs!r}"))
            for deviation in variant.deviations:
                if deviation.property == pid and style in deviation.styles:
                    marks.append(
                        pytest.mark.xfail(strict=deviation.strict, reason=deviation.reason)
                    )
            params.append(pytest.param(case, id=case.id, marks=marks))
    if not params:
        params.append(
            pytest.param(
                None,
                id="no-variant",
                marks=pytest.mark.skip(
                    reason="no selected variant speaks a style this property has a scenario for"
                ),
            )
        )
    metafunc.parametrize("case", params)


@pytest.fixture
def play(request: pytest.FixtureRequest, case: Case):
    """play(*args) runs this property's scenario for the case and returns its outcome."""
    spec = request.function.lab_property
    return functools.partial(play_scenario, case, spec.scenarios[case.style])
