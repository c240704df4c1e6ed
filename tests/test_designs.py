"""What the reading path says about the loops comes from the loops, and every figure from data.

Three guards, so that a sentence about "the loops" cannot go stale as loops are added or
changed, nor a figure as the bench re-measures:

- each variant's design declarations (``loops/contract.py``: ``io_model``, ``waits_in``,
  ``wake_up``, ``thread_entries``, ``cancellation``) are checked against its code: a home-made
  loop against its own folder, a reference loop against the files of the project its cells
  name;
- every ``<!-- figures:NAME -->`` block of the reading path holds what
  :mod:`bench.render.reading` renders now (from the committed results and the declarations);
- no figure with a unit stands outside a block, unless its paragraph carries the command and
  the date that gave it; and no sentence generalises over the loops with a word the designs
  table declares loop by loop.
"""

import ast
import importlib.util
import re
from pathlib import Path

import pytest

import loops
from bench.render import reading
from bench.store import RESULTS, load_anatomy
from loops.contract import IO_MODELS, THREAD_ENTRIES

ROOT = Path(__file__).resolve().parent.parent
# The tree's own variants (not a throw-away folder that LAB_EXTRA_LOOPS adds).
AVAILABLE = {n: v for n, v in loops.available().items() if (ROOT / "loops" / n).is_dir()}
HOME_MADE = sorted(name for name, v in AVAILABLE.items() if not v.reference)
REFERENCES = sorted(name for name, v in AVAILABLE.items() if v.reference)
FIELDS = ("io_model", "waits_in", "wake_up", "thread_entries", "cancellation")


def folder_code(name: str) -> str:
    """A home-made loop's code, its essence left out (the essence is not the loop)."""
    folder = ROOT / "loops" / name
    return "\n".join(p.read_text() for p in sorted(folder.glob("*.py")) if p.name != "essence.py")


def imported(source: str) -> set[str]:
    """The top-level modules a source imports."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def defined(source: str) -> set[str]:
    """Every function and method name a source defines."""
    return {
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


@pytest.mark.parametrize("name", sorted(AVAILABLE))
def test_every_variant_declares_its_design(name):
    variant = AVAILABLE[name]
    for field in FIELDS:
        assert getattr(variant, field), f"loops/{name}/__init__.py: VARIANT.{field} not declared"
    assert variant.io_model in IO_MODELS


@pytest.mark.parametrize("name", HOME_MADE)
def test_a_home_made_loops_io_model_and_wait_are_in_its_code(name):
    """Readiness means waiting in select/selectors; completion means neither, and io_uring."""
    variant, code = AVAILABLE[name], folder_code(name)
    modules = imported(code)
    if variant.io_model == "readiness":
        assert modules & {"select", "selectors"}, f"{name} declares readiness, imports no poller"
    else:
        assert not modules & {"select", "selectors"}, f"{name} declares completion, yet polls"
    assert variant.waits_in.split(".")[0] in modules or "." not in variant.waits_in
    assert re.search(rf"\b{re.escape(variant.waits_in)}\b", code), (
        f"{name} declares it sleeps in {variant.waits_in}, which its code never calls"
    )


@pytest.mark.parametrize("name", HOME_MADE)
def test_a_home_made_loops_wake_up_and_thread_entries_are_in_its_code(name):
    variant, code = AVAILABLE[name], folder_code(name)
    maker = {"socketpair": "socket.socketpair(", "eventfd": "os.eventfd("}[variant.wake_up]
    assert maker in code, f"{name} declares a {variant.wake_up} wake-up; no {maker} in its code"
    functions = defined(code)
    offered = {entry for entry in THREAD_ENTRIES if entry in functions}
    assert set(variant.thread_entries) == offered, (
        f"{name} declares {variant.thread_entries}; its code defines {sorted(offered)}"
    )


@pytest.mark.parametrize("name", HOME_MADE)
def test_a_home_made_loops_cancellation_names_its_code(name):
    code = folder_code(name)
    for ref in re.findall(r"`([^`]+)`", AVAILABLE[name].cancellation):
        for word in re.findall(r"[A-Za-z_]\w*", ref):
            assert re.search(rf"\b{word}\b", code), f"{name}: cancellation names {word}, not found"


def _package_file(ref: str) -> Path | None:
    """`asyncio/tasks.py` as a file of the installed package, or None if not importable."""
    top, _, rest = ref.partition("/")
    spec = importlib.util.find_spec(top) if top.isidentifier() else None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / rest


@pytest.mark.parametrize("name", REFERENCES)
def test_a_reference_loops_cells_name_files_that_hold_what_they_say(name):
    """A sentence about another project's internals names its file; the file is there and holds
    every name the cell gives (a file of a project not installed as Python, libuv's C, is not
    checked)."""
    variant = AVAILABLE[name]
    for field in ("waits_in", "wake_up", "cancellation"):
        cell = getattr(variant, field)
        refs = re.findall(r"`([^`]+)`", cell)
        paths = [ref for ref in refs if "/" in ref]
        assert paths, f"{name}.{field} names no file: {cell!r}"
        files = [_package_file(path) for path in paths]
        if None in files:
            continue
        for path in files:
            assert path.is_file(), f"{name}.{field}: no {path}"
        text = "\n".join(path.read_text() for path in files)
        for ref in refs:
            if "/" in ref:
                continue
            for word in re.findall(r"[A-Za-z_]\w*", ref):
                assert re.search(rf"\b{word}\b", text), f"{name}.{field}: {word} not in {paths}"


@pytest.mark.parametrize("name", REFERENCES)
def test_a_reference_loops_thread_entries_are_its_api(name):
    variant = AVAILABLE[name]
    offered = set()
    if variant.callbacks is not None:
        offered |= {e for e in THREAD_ENTRIES if hasattr(variant.callbacks, e)}
    for api in (variant.coroutines, variant.blocking):
        if api is not None and hasattr(api, "run_in_thread"):
            offered.add("run_in_thread")
    assert set(variant.thread_entries) == offered


def test_no_loop_registers_edge_triggered():
    """The primer says every epoll in loops/ is level-triggered (reported at each wait while
    ready); a folder that passes EPOLLET would make it false."""
    for path in (ROOT / "loops").glob("*/*.py"):
        assert "EPOLLET" not in path.read_text(), f"{path.relative_to(ROOT)} uses EPOLLET"


# -- the rendered blocks ---------------------------------------------------------------------


def test_the_designs_table_is_rendered_from_the_declarations():
    text = (ROOT / "loops" / "README.md").read_text()
    found = dict(reading.BLOCK.findall(text))
    assert "designs" in found, "loops/README.md has no <!-- figures:designs --> block"
    fresh = reading.designs(found["designs"])
    rows = {line for line in found["designs"].splitlines() if line.startswith("| `")}
    for name in AVAILABLE:
        row = reading.design_row(AVAILABLE[name])
        assert row in fresh
        assert row in rows, f"the designs table is stale for {name}: run `python -m bench report`"


def test_every_figure_block_holds_what_the_committed_results_render():
    rendering = reading.blocks(load_anatomy(RESULTS))
    for page in reading.pages():
        for name, old in reading.BLOCK.findall(page.read_text()):
            assert name in rendering, f"{page}: unknown block {name}"
            if name == "designs":
                continue  # rows of variants unavailable here are kept: checked above
            assert rendering[name](old) == old, (
                f"{page.relative_to(ROOT)}: block {name} is stale: run `python -m bench report`"
            )


@pytest.mark.parametrize("name", HOME_MADE)
def test_each_loops_readme_ends_with_what_its_design_gives_up(name):
    """One short last paragraph: good for, costs (a rendered block), gives up against the two
    control rows."""
    last = (ROOT / "loops" / name / "README.md").read_text().rstrip().split("\n\n")[-1]
    assert last.startswith("**What this design is good for, what it costs, what it gives up.**")
    assert f"<!-- figures:cost:{name} -->" in last
    assert "asyncio-protocol" in last and "uvloop" in last


FIGURE = re.compile(
    r"\d[\d,.]*\s*(µs|ns|req/s|requests/s|syscalls per|syscalls/req)|"
    r"\d[\d,.]*\s*(of them )?failed recvs"
)
DATED_COMMAND = (re.compile(r"`[^`]*python3? -m [^`]+`"), re.compile(r"\b20\d\d-\d\d-\d\d\b"))


def reading_path_texts() -> list[Path]:
    loops_dir = ROOT / "loops"
    return [
        *reading.pages(),
        *sorted(loops_dir.glob("*/essence.py")),
        loops_dir / "primer.py",
        loops_dir / "why_a_loop.py",
        ROOT / "workloads" / "echo" / "native" / "floor.py",
    ]


@pytest.mark.parametrize("path", reading_path_texts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_bare_figure_outside_a_block(path):
    """A figure with a unit is rendered from data, or its paragraph says how and when it was
    measured (a `python -m ...` command and a date)."""
    text = reading.BLOCK.sub("", path.read_text())
    for paragraph in re.split(r"\n\s*\n|\n\s*- ", text):  # paragraphs and list items
        for match in FIGURE.finditer(paragraph):
            if path.suffix == ".py" and 'f"' in paragraph:
                continue  # a program printing what it measures as it runs
            dated = all(pattern.search(paragraph) for pattern in DATED_COMMAND)
            where = f"{path.relative_to(ROOT)}: bare figure {match[0]!r} in {paragraph[:300]!r}"
            assert dated, where


# Words the designs table declares loop by loop: a sentence about every loop must not use them.
DECLARED_WORDS = r"readiness|completion|epoll|selectors?|socketpair|eventfd|call_soon_threadsafe"
EVERY_LOOP = r"\b(every|each|all( the)?|any)( other)? (home-made )?loops?\b|\ball six\b|\bthe six\b"


@pytest.mark.parametrize("path", reading_path_texts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_sentence_generalises_a_declared_design_over_the_loops(path):
    """A sentence such as "every loop is readiness-based" goes false the day a variant differs:
    what differs by loop is in the designs table, rendered from the loops' own declarations."""
    text = reading.BLOCK.sub("", path.read_text())
    for sentence in re.split(r"(?<=[.!?:])\s+", re.sub(r"\s+", " ", text)):
        if re.search(EVERY_LOOP, sentence, re.I) and re.search(DECLARED_WORDS, sentence, re.I):
            pytest.fail(f"{path.relative_to(ROOT)}: {sentence!r}")
