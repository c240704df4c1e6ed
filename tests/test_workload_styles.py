"""A workload's style files are one program in four styles: a reader can diff them (and so
are the TLS layer's, ``workloads/tls/``).

generators.py must be coroutines.py with ``yield from`` for ``await`` (docstrings aside, which
name the style); blocking.py must be coroutines.py without ``await``, with a task or a timeout
given as a function and its arguments (``co.spawn(fn, *args)``, ``co.timeout_after(s, fn,
*args)``, ``co.run(fn, *args)``) where coroutines.py passes a coroutine object; and
callbacks.py must define the same top-level functions in the same order.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STUDIES = Path(__file__).resolve().parent.parent / "workloads"


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


# The calls that take a task's body: a coroutine object in coroutines.py, (fn, *args) here.
TAKES_A_BODY = {"spawn", "run", "timeout_after"}


class _Unawaited(ast.NodeTransformer):
    """coroutines.py as the blocking style writes it: no await, bodies as (fn, *args)."""

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        fields = {name: getattr(node, name) for name in node._fields}
        return ast.copy_location(ast.FunctionDef(**fields), node)

    def visit_Await(self, node: ast.Await) -> ast.AST:
        return self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        body = node.args[-1] if node.args else None
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in TAKES_A_BODY
            and isinstance(body, ast.Call)
        ):
            node.args = [*node.args[:-1], body.func, *body.args]
        return node


def _shape(path: Path, transform: ast.NodeTransformer | None = None) -> str:
    """The module's code as an AST dump, docstrings left out."""
    tree = ast.parse(path.read_text())
    for node in [tree, *ast.walk(tree)]:
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                node.body = body[1:] or [ast.Pass()]
    if transform is not None:
        tree = transform.visit(tree)
    return ast.dump(tree)


@pytest.mark.parametrize(
    ("workload", "functions"),
    [
        (
            "echo",
            ["serve", "main", "cancel_on_signal", "tcp_server", "echo", "tls_echo", "udp_server"],
        ),
        ("tls", ["handshake", "recv", "sendall", "unwrap", "exchange", "flush"]),
        ("sleep", ["run", "main", "sleeper", "watch"]),
        ("crawler", ["crawl", "crawl_all", "work", "visit", "fetch", "exchange", "connect"]),
    ],
)
def test_the_style_files_differ_only_where_the_style_differs(workload, functions):
    folder = STUDIES / workload
    coroutines, coroutine_functions = _code_and_functions(folder / "coroutines.py")
    generators, generator_functions = _code_and_functions(folder / "generators.py")
    _, callback_functions = _code_and_functions(folder / "callbacks.py")
    assert generators == coroutines.replace("async def", "def").replace("await ", "yield from ")
    assert _shape(folder / "blocking.py") == _shape(folder / "coroutines.py", _Unawaited())
    _, blocking_functions = _code_and_functions(folder / "blocking.py")
    assert callback_functions == generator_functions == coroutine_functions == functions
    assert blocking_functions == functions
