"""A workload's style files are one program in three styles: a reader can diff them.

generators.py must be coroutines.py with ``yield from`` for ``await`` (docstrings aside), and
callbacks.py must define the same top-level functions in the same order.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"


def _code_and_functions(path: Path) -> tuple[str, list[str]]:
    """A module's code after its docstring, and its top-level function names in order."""
    source = path.read_text()
    tree = ast.parse(source)
    code = "\n".join(source.splitlines()[tree.body[0].end_lineno :])
    functions = [
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    return code, functions


@pytest.mark.parametrize(
    ("workload", "functions"),
    [
        ("echo", ["serve", "main", "cancel_on_signal", "tcp_server", "echo", "udp_server"]),
        ("sleep", ["run", "main", "sleeper", "watch"]),
    ],
)
def test_the_style_files_differ_only_where_the_style_differs(workload, functions):
    folder = WORKLOADS / workload
    coroutines, coroutine_functions = _code_and_functions(folder / "coroutines.py")
    generators, generator_functions = _code_and_functions(folder / "generators.py")
    _, callback_functions = _code_and_functions(folder / "callbacks.py")
    assert generators == coroutines.replace("async def", "def").replace("await ", "yield from ")
    assert callback_functions == generator_functions == coroutine_functions == functions
