"""What the reading path says about the loops comes from the loops, and every figure from data.

Three guards, so that a sentence about "the loops" cannot go stale as loops are added or
changed, nor a figure as the bench re-measures:

- each variant's design declarations (``loops/contract.py``: ``io_model``, ``waits_in``,
  ``wake_up``, ``thread_entries``, ``cancellation``, ``reporting``, ``ghost_fds``,
  ``socket_call_first``) are checked against its code: a home-made loop against its own
  folder, a reference loop against the files of the project its cells name, and what a socket
  call does first by running one;
- every ``<!-- figures:NAME -->`` block of a README holds what :mod:`bench.render.reading`
  renders now (from the committed results, the declarations, the registrations and the code);
- no figure with a unit stands in a README outside a block (a program of the path may print
  one, or carry it with the command and the date that gave it).

A sentence that speaks for the loops is held to their declarations by tests/test_prose.py.
"""

import ast
import importlib.util
import inspect
import re
import selectors
import socket
from pathlib import Path

import pytest

import loops
from bench.render import reading
from bench.store import RESULTS, load_anatomy
from loops.contract import DECLARED_KEYS, IO_MODELS, THREAD_ENTRIES, declared_key

ROOT = Path(__file__).resolve().parent.parent
# The tree's own variants (not a throw-away folder that LAB_EXTRA_LOOPS adds).
AVAILABLE = {n: v for n, v in loops.available().items() if (ROOT / "loops" / n).is_dir()}
HOME_MADE = sorted(name for name, v in AVAILABLE.items() if not v.reference)
REFERENCES = sorted(name for name, v in AVAILABLE.items() if v.reference)
FIELDS = ("io_model", "waits_in", "wake_up", "thread_entries", "cancellation", *DECLARED_KEYS)


def folder_code(name: str) -> str:
    """A home-made loop's code, its essence left out (the essence is not the loop), with the
    shared helpers of loops/ it imports (``loops._poll``)."""
    folder = ROOT / "loops" / name
    own = [p.read_text() for p in sorted(folder.glob("*.py")) if p.name != "essence.py"]
    shared = sorted(set(re.findall(r"^from loops\.(_\w+) import", "\n".join(own), re.M)))
    return "\n".join(own + [(ROOT / "loops" / f"{module}.py").read_text() for module in shared])


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
    for field, table in DECLARED_KEYS.items():
        assert declared_key(getattr(variant, field)) in table


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


NAMED = ("cancellation", *DECLARED_KEYS)  # the declarations that name code in backticks


@pytest.mark.parametrize("name", HOME_MADE)
def test_a_home_made_loops_declarations_name_its_code(name):
    code = folder_code(name)
    for field in NAMED:
        for ref in re.findall(r"`([^`]+)`", getattr(AVAILABLE[name], field)):
            for word in re.findall(r"[A-Za-z_]\w*", ref):
                assert re.search(rf"\b{word}\b", code), f"{name}: {field} names {word}, not found"


# The epoll flags a registration may carry, by the reporting they make.
FLAGS = {"epoll-edge": "EPOLLET", "epoll-oneshot": "EPOLLONESHOT"}


@pytest.mark.parametrize("name", HOME_MADE)
def test_a_home_made_loops_reporting_is_what_its_code_registers(name):
    """A flag in the code makes its reporting, and a reporting without its flag is
    level-triggered: selectors' epoll passes none (Lib/selectors.py, EpollSelector)."""
    variant, code = AVAILABLE[name], folder_code(name)
    reporting = declared_key(variant.reporting)
    for kind, flag in FLAGS.items():
        assert (flag in code) == (reporting == kind), f"{name} declares {reporting}; {flag}?"
    if reporting == "select":
        assert "select.select(" in code and "epoll" not in code
    elif reporting == "poll":
        assert "select.poll(" in code and "epoll" not in code
    elif reporting == "blocking":  # threads or greenlets each blocked in a socket call
        assert not {"select", "selectors"} & imported(code), f"{name} blocks, yet polls"
    elif reporting == "io_uring":
        assert variant.io_model == "completion" and "io_uring_enter" in code
    elif reporting == "epoll-level":
        assert "select.epoll(" in code or "selectors.DefaultSelector(" in code
        if "selectors.DefaultSelector(" in code:
            assert selectors.DefaultSelector is selectors.EpollSelector
            assert not any(flag in inspect.getsource(selectors) for flag in FLAGS.values())
    else:
        pytest.fail(f"{name}: no check written for reporting {reporting!r}")


GHOST_PROPERTY = "faults_fds.a_socket_closed_behind_a_dup_neither_crashes_nor_spins_the_loop"


@pytest.mark.parametrize("name", sorted(AVAILABLE))
def test_a_loop_declared_to_spin_on_a_ghost_is_the_one_with_the_deviation(name):
    """Among the variants that claim "io", whose suite plays the ghost property."""
    variant = AVAILABLE[name]
    if "io" not in variant.capabilities:
        pytest.skip(f"{name} does not claim io: the ghost property is not played on it")
    spins = declared_key(variant.ghost_fds) == "spins"
    deviates = any(d.property == GHOST_PROPERTY for d in variant.deviations)
    assert spins == deviates, f"{name}: ghost_fds {variant.ghost_fds!r}, deviation: {deviates}"


def _recv_twice(co, a):
    """Two one-byte recvs on a socket whose bytes already wait, while another task spins:
    for each, whether the spinner ran during it (the recv let other work run first)."""

    async def main():
        spins, switched = [0], []

        async def spinner():
            while spins[0] >= 0:
                spins[0] += 1
                await co.sleep(0)

        task = await co.spawn(spinner())
        for _ in range(3):
            await co.sleep(0)  # the spinner is in its loop
        for _ in range(2):
            before = spins[0]
            assert await co.recv(a, 1) in (b"x", b"y")
            switched.append(spins[0] != before)
        spins[0] = -1
        await co.join(task)
        return switched

    return co.run(main())


@pytest.mark.parametrize("name", sorted(AVAILABLE))
def test_a_socket_call_does_first_what_the_loop_declares(name):
    """ "tries" calls the socket before any other work runs (once the loop's own per-turn quota,
    if any, allows: one of two calls in a row is enough); the other keys let it run first."""
    variant = AVAILABLE[name]
    first = declared_key(variant.socket_call_first)
    if first == "none":
        assert variant.coroutines is None and variant.generators is None, (
            f"{name} declares no socket calls, yet speaks {variant.styles}"
        )
        return
    if variant.coroutines is None or first == "blocks" or "io" not in variant.capabilities:
        pytest.skip(f"{name}: no socket calls in coroutines it claims to run the check in")
    a, b = socket.socketpair()
    a.setblocking(False)
    try:
        b.sendall(b"xy")
        switched = _recv_twice(variant.coroutines, a)
    finally:
        a.close()
        b.close()
    assert (not all(switched)) == (first == "tries"), f"{name}: {first}, switched {switched}"


def _package_file(ref: str) -> Path | None:
    """`asyncio/tasks.py` as a file of the installed package, `selectors.py` as a module of
    the standard library, or None if not importable."""
    top, _, rest = ref.partition("/")
    if not rest and top.endswith(".py"):
        spec = importlib.util.find_spec(top.removesuffix(".py"))
        return Path(spec.origin) if spec and spec.origin else None
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
    for field in ("waits_in", "wake_up", "cancellation", *DECLARED_KEYS):
        cell = getattr(variant, field)
        refs = re.findall(r"`([^`]+)`", cell)
        paths = [ref for ref in refs if "/" in ref or ref.endswith(".py")]
        if field == "ghost_fds" and not refs:
            continue  # "spins" is checked against the variant's deviations
        assert paths, f"{name}.{field} names no file: {cell!r}"
        files = [_package_file(path) for path in paths]
        if None in files:
            continue
        for path in files:
            assert path.is_file(), f"{name}.{field}: no {path}"
        text = "\n".join(path.read_text() for path in files)
        for ref in refs:
            if ref in paths:
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


# -- the rendered blocks ---------------------------------------------------------------------


@pytest.mark.parametrize("table", sorted(reading.TABLES))
def test_the_designs_tables_are_rendered_from_the_declarations(table):
    text = (ROOT / "loops" / "README.md").read_text()
    found = dict(reading.BLOCK.findall(text))
    assert table in found, f"loops/README.md has no <!-- figures:{table} --> block"
    fresh = reading.table(table, found[table])
    rows = {line for line in found[table].splitlines() if line.startswith("| `")}
    row = reading.TABLES[table][1]
    for name in AVAILABLE:
        assert row(AVAILABLE[name]) in fresh
        assert row(AVAILABLE[name]) in rows, (
            f"the {table} table is stale for {name}: run `python -m bench report`"
        )


def test_every_figure_block_holds_what_the_committed_results_render():
    rendering = reading.blocks(load_anatomy(RESULTS), RESULTS)
    for page in reading.readmes():
        for name, old in reading.BLOCK.findall(page.read_text()):
            assert name in rendering, f"{page}: unknown block {name}"
            if name in reading.TABLES:
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
    r"\d[\d,.]*\s*(of them )?failed recvs|\d[\d,. ]*\s*(code lines|lines of code)"
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


def bare_figures(text: str) -> list[tuple[str, str]]:
    """(figure, its paragraph) for each figure with a unit outside a rendered block."""
    found = []
    for paragraph in re.split(r"\n\s*\n|\n\s*- ", reading.BLOCK.sub("", text)):
        found += [(match[0], paragraph) for match in FIGURE.finditer(paragraph)]
    return found


@pytest.mark.parametrize("path", reading.readmes(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_readme_figure_is_typed(path):
    """A figure with a unit in a README is rendered by `python -m bench report`, from stored
    results or from the code, with its point and date; a measured history lives on a findings
    page of reports/, each figure beside its command."""
    for figure, paragraph in bare_figures(path.read_text()):
        pytest.fail(f"{path.relative_to(ROOT)}: typed figure {figure!r} in {paragraph[:300]!r}")


PROGRAMS = [p for p in reading_path_texts() if p.suffix == ".py"]


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_programs_figure_is_printed_or_dated(path):
    """A program of the path may print what it measures as it runs (an f-string), or carry a
    figure with the `python -m ...` command and the date that gave it."""
    for figure, paragraph in bare_figures(path.read_text()):
        if 'f"' in paragraph:
            continue
        dated = all(pattern.search(paragraph) for pattern in DATED_COMMAND)
        assert dated, f"{path.relative_to(ROOT)}: bare figure {figure!r} in {paragraph[:300]!r}"


# A sentence about every loop, or any of the lab's sets, is held to the loops by
# tests/test_prose.py, in every README, essence and module of the path.


def test_a_memory_block_gives_the_figures_or_what_stopped_the_loop(tmp_path):
    import json

    from bench.render.reading import memory

    def rep(value):
        return [{"bytes_per_sleeper": value}, {"bytes_per_sleeper": value + 2}]

    limit = [{"error": "spawn: can't start new thread: 22,057 tasks of this run are running"}]
    sleep = {
        "points": {
            "r": {
                "params": {"mode": "resident", "tasks": 100_000},
                "rows": {
                    "asyncio/coroutines": {"reps": rep(1_600)},
                    "greenlets/blocking": {"reps": rep(8_000)},
                    "threads/blocking": {"reps": limit},
                },
            }
        },
    }
    folder = tmp_path / "quick"
    folder.mkdir()
    from bench.store import FORMAT

    (folder / "sleep.json").write_text(
        json.dumps(
            {"format": FORMAT, "workload": "sleep", "mode": "quick", "sessions": {}, **sleep}
        )
    )
    assert memory(tmp_path, "greenlets").startswith(
        "8,001 bytes per sleeping task at 100,000 (asyncio · coroutines: 1,601 bytes)"
    )
    said = memory(tmp_path, "threads")
    assert said.startswith("per sleeping task at 100,000, no figure: stopped, the kernel refused")
    assert memory(tmp_path, "traps").startswith("(not measured yet")
