"""The reading path: every essence and the primer run, and stay what the README promises.

An essence (``loops/<name>/essence.py``) is a home-made loop's idea alone: at most 80 non-blank
lines, the standard library only (but the one library a design is about, DESIGN_LIBRARY), the
same names as the full loop, ending in a demo that ``python -m loops.<name>.essence`` runs.
The primer (``loops/primer.py``) is a set of examples that must hold. These tests run them as
a reader would, in a fresh interpreter.
"""

import ast
import builtins
import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest

import loops
import loops.primer

ROOT = Path(__file__).resolve().parent.parent
HOME_MADE = sorted(name for name, v in loops.available().items() if not v.reference)
ESSENCES = sorted(name for name in HOME_MADE if (ROOT / "loops" / name / "essence.py").is_file())
MAX_LINES = 80

# What each demo must print: evidence that the idea ran, not just that nothing crashed.
DEMO_SAYS = {
    "callbacks": ["call_soon: first", "timer: 0.05 s", "reader: b'ping' arrived"],
    "futures": ["CancelledError landed at the victim's `yield from", "task is cancelled"],
    "traps": [
        "answered Task at once",
        "thrown in: CancelledError(), CancelledError()",
        "main returned b'ping'",
    ],
    "roundrobin": ["main read b'ping'", "a0 b0 a1 b1 a2 b2"],
    "handlers": ["('EchoConnection', False, True)", "got b'ping' back", "closed: ['EchoServer']"],
    "completions": ["io_uring_enter: submit 2, wait True", "main returned b'ping'"],
    "greenlets": [
        "where they waited: CancelledError('s'), CancelledError('r')",
        "main returned b'ping'",
    ],
    "scopes": [
        "the deadline cancelled both children; the nursery waited for them",
        "a checkpoint in the expired scope raised CancelledError, and it was caught",
        "a shielded sleep finished inside the cancelled scope",
        "cancelled_caught=True",
    ],
}
# Beside the standard library, the one library a home-made loop's design is about (declared with
# loops.requires in its folder): greenlets switches greenlets.
DESIGN_LIBRARY = {"greenlets": {"greenlet"}}
# Names an essence defines that the full loop need not: the handlers essence's application
# handlers live in the handler-style echo anchor instead.
ELSEWHERE = {"handlers": ROOT / "workloads/echo/native/handlers_cookbook.py"}


def essence(name: str) -> Path:
    return ROOT / "loops" / name / "essence.py"


def test_the_home_made_loops_have_an_essence():
    # A variant added later (nox -s new) is welcome to one: the tests below then run it too.
    # (One unavailable here, completions without io_uring, still has its folder and essence.)
    assert set(DEMO_SAYS) <= {name for name, v in loops.discover().items() if not v.reference}
    for name in DEMO_SAYS:
        assert essence(name).is_file(), f"loops/{name}/essence.py is missing"


@pytest.mark.parametrize("name", ESSENCES)
def test_the_essence_demo_runs_and_shows_the_idea(name):
    done = subprocess.run(
        [sys.executable, "-m", f"loops.{name}.essence"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert not done.stderr, done.stderr  # no warnings either (an un-awaited coroutine, say)
    assert done.stdout.strip(), "the demo says nothing"
    for words in DEMO_SAYS.get(name, []):
        assert words in done.stdout


@pytest.mark.parametrize("name", ESSENCES)
def test_the_essence_is_short_and_standard_library_only(name):
    source = essence(name).read_text()
    lines = [line for line in source.splitlines() if line.strip()]
    assert len(lines) <= MAX_LINES, f"{name}'s essence has {len(lines)} non-blank lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        else:
            continue
        for module in modules:
            top = module.split(".")[0]
            allowed = top in sys.stdlib_module_names or top in DESIGN_LIBRARY.get(name, ())
            assert allowed, f"{name} imports {module}"


@pytest.mark.parametrize("name", ESSENCES)
def test_the_essence_uses_the_full_loops_names(name):
    """Every class and function the essence defines is found, by that name, in the full loop."""
    tree = ast.parse(essence(name).read_text())
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    }
    defined |= {
        f"{cls.name}.{node.name}"
        for cls in tree.body
        if isinstance(cls, ast.ClassDef)
        for node in cls.body
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("__")
    }
    full = [p for p in (ROOT / "loops" / name).glob("*.py") if p.name != "essence.py"]
    if name in ELSEWHERE:
        full.append(ELSEWHERE[name])
    found: set[str] = set()
    for path in full:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found.add(node.name)
                found |= {
                    f"{node.name}.{item.name}"
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                }
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.add(node.name)
    # A method the essence defines on a subclass may live on its base in the full loop.
    methods = {n.split(".")[1] for n in found if "." in n}
    missing = {n for n in defined - found if "." not in n or n.split(".")[1] not in methods}
    assert not missing, f"{name}'s essence names what its full loop does not: {sorted(missing)}"


def test_essences_are_not_variants():
    for name in HOME_MADE:
        assert loops.get(name).name == name
    assert not any("essence" in name for name in loops.discover())


def test_the_primer_examples_hold():
    failed, attempted = doctest.testmod(loops.primer, verbose=False)
    assert attempted >= 30 and failed == 0


def test_the_primer_runs_as_a_script():
    done = subprocess.run(
        [sys.executable, "-m", "loops.primer"], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "examples hold" in done.stdout


def test_step_0_shows_why_a_loop_exists():
    """loops/why_a_loop.py: blocking serves one client at a time, a thread per client serves both
    with a thread each, busy polling serves both and burns CPU in failed calls, readiness serves
    both and sleeps; then a thread per client's cost against the selectors server's at a few
    hundred clients. The shape, never a duration."""
    done = subprocess.run(
        [sys.executable, "-m", "loops.why_a_loop"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    sections = {}
    for block in done.stdout.split("\n\n")[1:5]:
        title, order, _waited, costs = block.strip().splitlines()
        figures = re.search(
            r"CPU ([\d.]+) s.*BlockingIOError: (\d+); select\(\) calls: (\d+); "
            r"threads started: (\d+)",
            costs,
        )
        assert figures, costs
        events = order.split("order: ")[1].split(", ")
        cpu, failed, selects, threads = (float(figures[1]), *map(int, figures.groups()[1:]))
        sections[title.split(" (")[1].rstrip(")")] = events, cpu, failed, selects, threads
    assert list(sections) == ["serve_blocking", "serve_threads", "serve_busy", "serve_selectors"]
    blocking, threads, busy, readiness = sections.values()
    # Blocking: B is served only once A has gone.
    assert blocking[0].index("B echoed") > blocking[0].index("A closed")
    assert blocking[2] == 0
    # Threads and non-blocking: both served at once; threads with a thread each.
    for events, *_ in (threads, busy, readiness):
        assert events.index("B echoed") < events.index("A closed")
    assert threads[4] == 2 and threads[2] == 0
    # Busy polling fails call after call, readiness never.
    assert busy[2] > 100 and busy[3] == 0
    assert readiness[2] == 0 and readiness[3] > 0
    assert busy[1] > readiness[1]  # the busy loop's CPU against the sleeping one's, same run
    # The cost at a few hundred clients: a thread each, and the memory a thread's stack takes.
    found = re.findall(r"(serve_\w+): (\d+) thread\(s\); per client ([\d.]+) KiB", done.stdout)
    if "not measured here" in done.stdout:
        return
    cost = {name: (int(n), float(kib)) for name, n, kib in found}
    assert set(cost) == {"serve_threads", "serve_selectors"}
    assert cost["serve_threads"][0] > 100 and cost["serve_selectors"][0] == 1
    assert cost["serve_threads"][1] > cost["serve_selectors"][1]
    assert "context switches per echo" in done.stdout


# -- loops/README.md: the reading order and the concept table ------------------------------


def concept_table() -> tuple[list[str], list[list[str]]]:
    """The loops named in the table's header, and its rows of cells."""
    text = (ROOT / "loops" / "README.md").read_text()
    body = text.split("<!-- concepts:start -->")[1].split("<!-- concepts:end -->")[0]
    lines = [line.strip().strip("|") for line in body.strip().splitlines()]
    header, *rows = [[cell.strip() for cell in line.split("|")] for line in lines]
    return header[1:], rows[1:]  # rows[0] is the |---| line


def test_the_reading_order_names_every_home_made_loop_and_the_top_readme_points_to_it():
    text = (ROOT / "loops" / "README.md").read_text()
    order = text.split("## The order")[1].split("## One concept")[0]
    for name in DEMO_SAYS:
        assert f"[`{name}`]({name}/)" in order
    assert "floor.py" in order and "primer.py" in order
    assert order.index("(why_a_loop.py)") < order.index("(primer.py)")  # step 0 comes first
    top = (ROOT / "README.md").read_text()
    start_here = top.split("## Start here")[1].split("\n## ")[0]
    assert "loops/README.md" in start_here
    for name in DEMO_SAYS:
        assert f"`{name}`" in start_here


def test_the_glossary_points_at_code_that_shows_each_word():
    """Each entry of loops/README.md's "Words" links files; every name in backticks after the
    entry's first link (a function, class or attribute) is in the files it links."""
    text = (ROOT / "loops" / "README.md").read_text()
    words = text.split("\n## Words\n")[1].split("\n## ")[0]
    entries = re.split(r"\n- ", words)[1:]
    assert len(entries) >= 10
    for entry in entries:
        links = re.findall(r"\]\(([^)#]+)\)", entry)
        assert links, f"no link in {entry[:40]!r}"
        for link in links:
            assert (ROOT / "loops" / link).resolve().exists(), f"{link} is missing"
        code = "\n".join(
            (ROOT / "loops" / link).read_text() for link in links if link.endswith(".py")
        )
        after = entry.split("](", 1)[1]
        for name in re.findall(r"`([A-Za-z_][\w.]*)`", after):
            for word in name.split("."):
                assert re.search(rf"\b{word}\b", code), f"{entry[:30]!r}: no {name}"


def test_every_name_in_the_concept_table_is_in_that_loops_code():
    columns, rows = concept_table()
    assert sorted(columns) == sorted(DEMO_SAYS)
    for concept, *cells in rows:
        assert len(cells) == len(columns), f"row {concept!r} has {len(cells)} cells"
        for name, cell in zip(columns, cells, strict=True):
            folder = ROOT / "loops" / name
            essence_row = concept.startswith("essence")
            files = [p for p in folder.glob("*.py") if essence_row or p.name != "essence.py"]
            source = "\n".join(path.read_text() for path in files)
            for ref in re.findall(r"`([^`]+)`", cell):
                if ref.endswith(".py"):
                    assert (folder / ref).is_file(), f"{concept}, {name}: no file {ref}"
                    continue
                for word in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", ref):
                    assert re.search(rf"\b{word}\b", source), f"{concept}, {name}: no {word}"


@pytest.mark.parametrize("name", sorted(DEMO_SAYS))
def test_the_folder_readme_starts_from_the_essence_and_names_real_things(name):
    """Each README opens with its essence, then lists what the full loop adds, naming where."""
    folder = ROOT / "loops" / name
    text = (folder / "README.md").read_text()
    _title, opening, *_ = text.split("\n\n")
    assert opening.startswith("**Start with [`essence.py`](essence.py)**")
    assert "**What the full loop adds, and why:**" in text
    adds = text.split("**What the full loop adds, and why:**")[1].split("\n\n")[0]
    source = "\n".join(p.read_text() for p in folder.glob("*.py") if p.name != "essence.py")
    for ref in re.findall(r"`([^`]+)`", adds):
        if ref.endswith((".py", ".toml")):
            path = ROOT / ref if "/" in ref else folder / ref
            assert path.is_file(), f"{name}/README.md names a missing {ref}"
        elif re.fullmatch(r"[A-Za-z_][\w.]*(\(\))?", ref) and ref not in dir(builtins):
            for word in re.findall(r"\w+", ref):
                assert re.search(rf"\b{word}\b", source), f"{name}/README.md: no {word}"


def glossary_terms(text: str) -> list[str]:
    """The words of loops/README.md's "Words": each entry's bold head, split at " / " and ", "."""
    words = text.split("\n## Words\n")[1].split("\n## ")[0]
    terms = []
    for head in re.findall(r"^- \*\*([^*]+)\*\*", words, re.M):
        for term in re.split(r" / |, ", head):
            term = re.sub(r" \d+$", "", term.strip())
            if term and not term.isdigit():
                terms.append(term)
    return terms


def prose(text: str) -> str:
    """The path's text as a reader meets words in it: code spans, link targets, rendered blocks,
    the concept table and the folder listing (names of code) and HTML comments left out: a name
    in backticks is code, not a use of the word."""
    from bench.pages.reading import BLOCK

    text = BLOCK.sub("", text)
    for block in ("concepts", "listing"):  # generated inventories: names, not prose
        text = re.sub(rf"<!-- {block}:start -->.*?<!-- {block}:end -->", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    return re.sub(r"\]\([^)]*\)", "]", text)


def test_no_glossary_word_is_used_before_the_path_defines_it():
    """A glossary word's first use along the path is its definition, in italics or bold; the
    path is loops/README.md up to its "Words", read in order."""
    full = (ROOT / "loops" / "README.md").read_text()
    path = prose(full.split("\n## Words\n")[0])
    terms = glossary_terms(full)
    assert {"SQE", "CQE", "proactor", "reactor", "transport", "protocol"} <= set(terms)
    assert {"level-triggered", "edge-triggered", "checkpoint"} <= set(terms)
    emphasis = [(m.start(), m.end()) for m in re.finditer(r"\*{1,2}[^*\n]+\*{1,2}", path)]
    early = []
    for term in terms:
        pattern = re.compile(rf"(?<![\w-]){re.escape(term)}(s|es)?(?![\w-])", re.I)
        first = pattern.search(path)
        assert first, f"the path never uses {term!r}, which its glossary defines"
        if not any(start <= first.start() < end for start, end in emphasis):
            context = path[max(0, first.start() - 80) : first.end() + 40].replace("\n", " ")
            early.append(f"{term!r} is used before it is defined: ...{context}...")
    assert not early, "\n".join(early)


def test_the_top_readme_says_what_the_designs_words_mean_where_it_first_uses_them():
    """The root README names the designs before the path starts: each of their words is
    explained in place (in italics, with a gloss) the first time it appears."""
    text = prose((ROOT / "README.md").read_text())
    emphasis = [(m.start(), m.end()) for m in re.finditer(r"\*{1,2}[^*\n]+\*{1,2}", text)]
    for term in ("reactor", "proactor", "trap", "tick", "ready queue", "anchor"):
        first = re.search(rf"(?<![\w-]){term}s?(?![\w-])", text, re.I)
        assert first, f"the root README no longer uses {term!r}"
        assert any(start <= first.start() < end for start, end in emphasis), (
            f"the root README uses {term!r} before saying what it means"
        )
