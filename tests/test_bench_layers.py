"""The bench's layers, read from its code: a thin core under the studies, the pages over both.

A study is a folder, ``bench/studies/<name>/``: its declaration (``__init__.py``, data), its
running side (every other module but its rendering) and its rendering side (``render.py``,
``render_*.py``). The rules, over the static import graph with the modules loaded by name
(``importlib.import_module``: a literal names its module; a name read from a declaration,
``running=``, ``measuring=`` or ``rendering=``, stands for every module so declared):

- nothing in ``bench/`` imports itself back, by any path;
- the core imports no study, and the registry (``bench/registry.py``) only their
  declarations;
- a study's declaration imports neither its own running nor its rendering side, nor any
  study's;
- nothing rendering (the page kit, a study's rendering side, the pages) imports anything
  running (the runner, the processes, a study's running side).
"""

from __future__ import annotations

import ast
from pathlib import Path

from bench import registry

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

# The core: the plan, the protocol, the runner, processes, the store, the summary and
# statistics, and the page kit. The registry is the core's one door to the studies.
CORE = {
    "bench",
    "bench.plan",
    "bench.headline",
    "bench.length",
    "bench.study",
    "bench.store",
    "bench.fingerprint",
    "bench.summary",
    "bench.uncertainty",
    "bench.procs",
    "bench.runner",
    "bench.venvs",
    "bench.render",
    "bench.render.rows",
    "bench.render.tables",
    "bench.render.charts",
    "bench.render.intervals",
    "bench.render.drift",
    "bench.render.codesize",
    "bench.render.page",
}
REGISTRY = "bench.registry"
RUNNING_CORE = {"bench.runner", "bench.procs", "bench.venvs"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(BENCH.rglob("*.py"))}


def study_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["bench", "studies"] else None


def side(module: str) -> str:
    """declaration, running or rendering, for a module of a study folder."""
    parts = module.split(".")
    if len(parts) == 3:
        return "declaration"
    return "rendering" if parts[3] == "render" or parts[3].startswith("render_") else "running"


def resolve(name: str) -> str | None:
    """The bench module an imported name is, or is in (None: not the bench's)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def declared_loads() -> dict[str, set[str]]:
    """The modules the studies' declarations name for the core to load by name, by the field
    that names them (running, rendering)."""
    found: dict[str, set[str]] = {"running": set(), "measuring": set(), "rendering": set()}
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_bytes())):
            if (
                isinstance(node, ast.keyword)
                and node.arg in found
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                found[node.arg].add(node.value.value)
    return found


def nodes(tree: ast.AST):
    """Every node of a module but those under ``if TYPE_CHECKING:`` (names for readers and
    checkers, never imported when the code runs)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            continue
        yield node
        yield from nodes(node)


# The loads by name whose module the code computes from something other than a study's
# running= or rendering=: what each loads. A fingerprint reads a setting's value from the
# declaration a running module imports it from.
COMPUTED_LOADS = {"bench.fingerprint": "declarations"}


def edges(loads: bool = True) -> dict[str, set[str]]:
    """Every bench module's imports of bench modules, top level or inside a function, and (with
    `loads`) its loads by name."""
    by_name = declared_loads()
    by_name["declarations"] = {m for m in MODULES if study_of(m) and side(m) == "declaration"}
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        found = set()
        for node in nodes(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:  # a submodule by its name, else the module itself
                    inner = f"{node.module}.{alias.name}"
                    found.add(inner if inner in MODULES else node.module)
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            ):
                argument = node.args[0] if node.args else None
                if not loads:
                    continue
                if isinstance(argument, ast.Constant):
                    found.add(argument.value)
                elif getattr(argument, "attr", None) in ("running", "measuring", "rendering"):
                    found |= by_name[argument.attr]  # study.running, and the like
                else:
                    assert module in COMPUTED_LOADS, f"{module}: a load by name not read here"
                    found |= by_name[COMPUTED_LOADS[module]]
        graph[module] = {m for m in map(resolve, found) if m is not None and m != module}
    return graph


def test_the_graph_sees_the_bench_and_its_loads_by_name():
    graph = edges()
    assert "bench.studies.echo" in MODULES and "bench.runner" in MODULES
    assert "bench.studies.echo.measure" in declared_loads()["running"]
    assert "bench.studies.echo.render" in graph["bench.pages.report"]  # loaded by name
    assert "bench.headline" in graph["bench.studies.echo.measure"]


def test_no_cycle_in_the_bench():
    graph = edges()
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for other in sorted(graph[module]):
            if state.get(other) == 1:
                cycle = [*path[path.index(other) :], other] if other in path else [module, other]
                raise AssertionError(" -> ".join(cycle))
            if other not in state:
                visit(other, [*path, other])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_core_imports_no_study_and_the_registry_only_their_declarations():
    """Imports, not loads by name: the core reaches a study's sides only by the names its
    declaration gives (the runner its running side, the page its rendering side)."""
    graph = edges(loads=False)
    assert set(MODULES) >= CORE, CORE - set(MODULES)
    for module in sorted(CORE):
        studies = {m for m in graph[module] if study_of(m)}
        assert not studies, f"{module} imports {sorted(studies)}"
    named = {m for m in graph[REGISTRY] if study_of(m)}
    assert named and all(side(m) == "declaration" for m in named), sorted(named)


def test_echos_declaration_is_imported_by_its_own_folder_and_the_registry_only():
    """The headline point every summary reads is the core's (bench.headline); a study or page
    that needs echo's declared points asks the registry for them."""
    graph = edges(loads=False)
    importers = {m for m, found in graph.items() if "bench.studies.echo" in found}
    allowed = {REGISTRY} | {m for m in MODULES if study_of(m) == "echo"}
    assert importers, "the registry imports echo's declaration"
    assert importers <= allowed, sorted(importers - allowed)


def test_a_declaration_imports_no_running_or_rendering_side():
    graph = edges()
    for module in sorted(m for m in MODULES if study_of(m) and side(m) == "declaration"):
        wrong = {m for m in graph[module] if study_of(m) and side(m) != "declaration"}
        assert not wrong, f"{module} imports {sorted(wrong)}"


def test_nothing_rendering_imports_anything_running():
    graph = edges()
    rendering = {
        m
        for m in MODULES
        if m.startswith(("bench.render", "bench.pages")) or (study_of(m) and side(m) == "rendering")
    }
    running = RUNNING_CORE | {m for m in MODULES if study_of(m) and side(m) == "running"}
    for module in sorted(rendering):
        wrong = graph[module] & running
        assert not wrong, f"{module} imports {sorted(wrong)}"


def test_a_study_is_a_folder_with_its_sides_and_its_method():
    """Every registered study's running and rendering sides live in its own folder, beside its
    declaration and the README that holds its method."""
    for study in (*registry.STUDIES, *registry.SIDES):
        folder = f"bench.studies.{study.name}"
        running = getattr(study, "running", None) or study.measuring
        for side_module in (running, study.rendering):
            if side_module is not None:
                assert side_module.startswith(f"{folder}."), (study.name, side_module)
                assert side_module in MODULES, side_module
        assert (BENCH / "studies" / study.name / "README.md").is_file(), study.name
    for folder in sorted(p for p in (BENCH / "studies").iterdir() if p.is_dir()):
        if folder.name != "__pycache__":
            assert (folder / "__init__.py").is_file() and (folder / "README.md").is_file(), folder
