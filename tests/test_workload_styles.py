"""A workload's style files are one program in three styles: a reader can diff them.

generators.py must be coroutines.py with ``yield from`` for ``await`` (docstrings aside, which
name the style), and callbacks.py must define the same top-level functions in the same order.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

WORKLOADS = Path(__file__).resolve().parent.parent / "workloads"


def _code_and_functions(path: Path) -> tuple[str, list[str]]:
    """A module's code without its docstrings, and its top-level function names in order."""
    source = path.read_text()
    tree = ast.parse(source)
    docstrings = set()
    for node in [tree, *ast.walk(tree)]:
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = source.splitlines()
    code = "\n".join(line for number, line in enumerate(lines, 1) if number not in docstrings)
    functions = [
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    return code, functions


@pytest.mark.parametrize(
    ("workload", "functions"),
    [
        ("echo", ["serve", "main", "cancel_on_signal", "tcp_server", "echo", "udp_server"]),
        ("sleep", ["run", "main", "sleeper", "watch"]),
        ("crawler", ["crawl", "crawl_all", "work", "visit", "fetch", "exchange", "connect"]),
    ],
)
def test_the_style_files_differ_only_where_the_style_differs(workload, functions):
    folder = WORKLOADS / workload
    coroutines, coroutine_functions = _code_and_functions(folder / "coroutines.py")
    generators, generator_functions = _code_and_functions(folder / "generators.py")
    _, callback_functions = _code_and_functions(folder / "callbacks.py")
    assert generators == coroutines.replace("async def", "def").replace("await ", "yield from ")
    assert callback_functions == generator_functions == coroutine_functions == functions
