"""A claim about the lab's sets follows the sets, a figure its data, a fact every copy of it.

Prose lives in READMEs, the template, module docstrings and code comments; a later variant makes
an earlier sentence false where it speaks for a set it does not name. So every sentence of every
README and every module of loops/ that quantifies over one of the lab's sets (loops, variants,
styles, essences, entries, servers, rows) names the members it means or points to the designs
tables (rendered from the declarations); a count of a set ("four styles") is the set's size;
and a sentence that says which loops share a varying property (CLAIMS: how a loop takes a
blocking socket, whether it waits for readiness, what it needs beyond the standard library)
names exactly the loops whose declarations have it, so a variant added with other declarations
fails here naming each such sentence. A figure that estimates or measures, in any unit, typed
anywhere prose lives carries the command and the date that gave it, or the committed data it
was read from. A renderer's sentence types no figure and no comparison of loops: they come from
its data. A fact stated in several places (FACTS) is found in each by what it speaks of, and
every copy keeps the fact's condition. Each guard is shown to fail on a planted sentence.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

import loops
from bench.render import reading
from loops.contract import STYLES

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = {name: v for name, v in loops.discover().items()}
ESSENCES = sorted(p.parent.name for p in (ROOT / "loops").glob("*/essence.py"))
HOME_MADE = sorted(n for n, v in VARIANTS.items() if not v.reference)


def beyond_stdlib(name: str) -> set[str]:
    """The top-level modules outside the standard library that loops/NAME's code imports."""
    found = set()
    for path in (ROOT / "loops" / name).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"loops", "__future__"}


# The declarations of what varies between variants, read from the variants themselves.
def takes_blocking_sockets(name: str) -> bool:
    return "blocking" in VARIANTS[name].styles


def waits_for_readiness(name: str) -> bool:
    return VARIANTS[name].io_model == "readiness"


DECLARED = sorted(n for n, v in VARIANTS.items() if v.io_model)  # loaded here: declarations


# A sentence matching a pattern names exactly the loops (among `among`) with the property.
CLAIMS = [
    (
        re.compile(r"blocking sockets? (refused|rejected)|refuses? a blocking socket", re.I),
        lambda n: not takes_blocking_sockets(n),
        HOME_MADE,
    ),
    (
        re.compile(
            r"wait (this|that) way and which|(does|do) not wait for readiness|not on readiness",
            re.I,
        ),
        lambda n: not waits_for_readiness(n),
        DECLARED,
    ),
    (
        re.compile(r"standard library only, but for", re.I),
        lambda n: bool(beyond_stdlib(n)),
        ESSENCES,
    ),
]

# The lab's sets: its loops, variants, styles, essences, the public entries of the contract,
# the echo servers, the rows of a page ("no server error" names no server).
SETS = r"(home-made |reference )?(loops?|variants?|styles?|essences?|entry|entries|servers?|rows?)"
PLURAL = r"(home-made |reference )?(loops|variants|styles|essences|entries|servers|rows)"
QUANTIFIED = re.compile(
    rf"\b(every|each|any|no)( other| public)? {SETS}\b(?!'s own| error)|"
    rf"\ball( the)?( other)? {PLURAL}\b|"  # "all the loop needs" is no quantifier
    rf"\bthe (home-made|reference) (loops|variants)\b",
    re.I,
)
NUMBERS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}
# A count of the whole set; "its two styles" counts one variant's, not the set.
COUNTED = re.compile(
    rf"(?<!its )(?<!their )(?<!same )\b({'|'.join(NUMBERS)}) "
    r"(home-made )?(loops|variants|styles|essences)\b",
    re.I,
)
# Machinery that runs on every member by construction (the suite, discovery, a listing, a
# test): a sentence about it speaks for the set truly the day a member is added.
CONSTRUCTED = re.compile(
    r"\b(suite|matrix|discover(y|s)|lists?|listing|generated|parametri[sz]ation|plays?|traces?|"
    r"by hand|variant folder|test_\w+\.py|holds? the two|the contract asks|charts?)\b|"
    r"`(python3? -m|nox -s) ",  # a command: it runs on what it is given
    re.I,
)
TABLE_LINK = re.compile(r"#each-loops-design|\btable of designs\b|\bdesigns tables?\b", re.I)
NAMES = sorted({*VARIANTS, *STYLES}, key=len, reverse=True)
NAMED = re.compile(rf"(?<![\w/.-])({'|'.join(map(re.escape, NAMES))})(?![\w/-])")


def prose_of_python(path: Path) -> str:
    """A module's docstrings and comments, one paragraph each."""
    return _python_prose(path.read_text())


def _python_prose(text: str) -> str:
    parts = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if doc:  # a doctest's example, to the blank line that ends it, is code
                parts.append(re.sub(r"^>>> .*?(?=\n\s*\n|\Z)", "", doc, flags=re.M | re.S))
    # A run of whole-line comments on consecutive lines is one paragraph; a comment after code
    # speaks for its line alone.
    comments: list[list[str]] = []
    last = -1
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            whole = tok.line.lstrip().startswith("#")
            if not (whole and tok.start[0] == last + 1 and comments):
                comments.append([])
            comments[-1].append(tok.string.lstrip("#").strip())
            last = tok.start[0] if whole else -1
    return "\n\n".join([*parts, *("\n".join(run) for run in comments)])


def texts() -> list[Path]:
    """Every README (the reading path's, the template's among them) and every module of loops/
    (the essences, the template's, each variant's code)."""
    return sorted(
        {
            *reading.readmes(),
            *(ROOT / "loops").rglob("*.py"),
            ROOT / "workloads" / "echo" / "native" / "floor.py",  # the path's floor step
        }
    )


def sentences(path: Path) -> list[str]:
    return _sentences(path.suffix == ".py", path.read_text())


@functools.cache  # by text: the fact tests read every file three times
def _sentences(python: bool, text: str) -> list[str]:
    text = _python_prose(text) if python else text
    text = reading.BLOCK.sub("", text)
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)  # code, not prose
    text = re.sub(r"^#+ .*$", "", text, flags=re.M)  # a heading names a section, claims nothing
    text = re.sub(r"^\|.*\|$", "", text, flags=re.M)  # a table's row speaks for its own row
    return [
        sentence
        for paragraph in re.split(r"\n\s*\n", text)
        for sentence in re.split(r"(?<=[.!?;])\s+", re.sub(r"\s+", " ", paragraph).strip())
    ]


# "loop" in the sense of a loop object, not a variant: one running in this process, the one a
# queue would bind to, asyncio's loops at large.
OBJECT = re.compile(
    r"\bevery loop in the process|\bbinds to no loop\b|\basyncio does \w+ on any loop"
)
# Sentences of loop code another change is rewriting (the loops made leaner), each to name the
# loops it speaks for when it lands; each must still be there, so that it leaves this list then.
_SAME_RECORD = "The same record, with the same fields, in every home-made loop"  # not in 2 of 7
LOOP_CODE_PENDING = {
    "loops/callbacks/readiness.py": _SAME_RECORD,
    "loops/futures/reactor.py": _SAME_RECORD,
    "loops/greenlets/hub.py": "every home-made loop",
    "loops/roundrobin/scheduler.py": _SAME_RECORD,
    "loops/traps/poller.py": _SAME_RECORD,
    "loops/scopes/poller.py": _SAME_RECORD,  # traps' twin: changes with it
    "loops/completions/api.py": "blocking: a clear error, as in every loop",
}


def faults(path: Path, sentences_of=None) -> list[str]:
    """What is false or unchecked in the sentences of `path` (or of `sentences_of`, a text's)."""
    found = []
    for sentence in sentences_of if sentences_of is not None else sentences(path):
        if OBJECT.search(sentence):
            continue
        named = set(NAMED.findall(sentence))
        for number, _, what in COUNTED.findall(sentence):
            if _own_loop(path) and what.lower() == "styles":  # its own folder: its styles
                if NUMBERS[number.lower()] != len(VARIANTS[path.parent.name].styles):
                    found.append(f"{number} {what} in {path.parent.name}'s folder: {sentence!r}")
                continue
            size = {
                "loops": len(HOME_MADE),
                "variants": len(VARIANTS),
                "styles": len(STYLES),
                "essences": len(ESSENCES),
            }[what.lower()]
            if NUMBERS[number.lower()] != size:
                found.append(f"{number} {what}, but there are {size}: {sentence!r}")
        for pattern, has, among in CLAIMS:
            if pattern.search(sentence):
                wanted = {n for n in among if has(n)}
                if named & set(among) != wanted:
                    found.append(
                        f"names {sorted(named & set(among))}, not {sorted(wanted)}: {sentence!r}"
                    )
        if (
            QUANTIFIED.search(sentence)
            and not (TABLE_LINK.search(sentence) or CONSTRUCTED.search(sentence))
            and len(named) < 2
        ):
            found.append(f"speaks for a set it does not name: {sentence!r}")
    return found


# Texts being rewritten in another change in flight, checked once it lands (each must still fail
# here, so that it is taken off this list the day it is clean).
REWRITING = {"bench/README.md": "rewritten in another change (its studies' sections move)"}


@pytest.mark.parametrize("path", texts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_sentence_speaks_for_members_it_does_not_name(path):
    reason = REWRITING.get(str(path.relative_to(ROOT)))
    if reason:
        assert faults(path), f"{path} holds now: take it off REWRITING"
        pytest.skip(reason)
    found = faults(path)
    pending = LOOP_CODE_PENDING.get(str(path.relative_to(ROOT)))
    if pending:
        assert any(pending in f for f in found), f"{path}: {pending!r} is gone: unlist it"
        found = [f for f in found if pending not in f]
    assert not found, "\n".join(found)


# The machinery's modules (the bench, the suite, the workloads, the tracer, the site, the
# machine's facts) describe code that runs on every member it is given, so their docstrings'
# "every loop" is theirs by construction; what they may not do is misstate a declared property
# of the loops or the size of a set, which the loops' own declarations decide.
MACHINERY = ("bench", "conformance", "workloads", "timeline", "machine", "htmlreport", "tests")


def machinery_docstrings() -> list[Path]:
    return sorted(p for folder in MACHINERY for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", machinery_docstrings(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_docstring_misstates_a_declared_property_or_a_set_size(path):
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    found = [
        fault
        for fault in faults(path, _sentences(False, docstring))
        if fault.startswith("names ")  # a declared property, said of the wrong loops
        # a count said of the whole set ("the seven loops"), not of some ("two loops share")
        or (
            re.match(r"(\w+) \w+, but there are", fault)
            and re.search(rf"\b(the|all)( the)? {fault.split()[0]} ", fault, re.I)
        )
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "planted",
    [
        "Every loop refuses a blocking socket.",
        f"It runs the {next(w for w, i in NUMBERS.items() if i == len(HOME_MADE) - 1)} loops.",
    ],
)
def test_a_misstatement_planted_in_a_machinery_docstring_fails(tmp_path, planted):
    module = tmp_path / "planted.py"
    module.write_text(f'"""A module of the bench.\n\n{planted}\n"""\n')
    monkey = pytest.MonkeyPatch()
    monkey.setattr(sys.modules[__name__], "ROOT", tmp_path, raising=False)
    try:
        with pytest.raises(AssertionError):
            test_no_module_docstring_misstates_a_declared_property_or_a_set_size(module)
    finally:
        monkey.undo()


# A figure that estimates or measures, in any unit: a duration, a percentage, a multiplier or a
# count of things, said to be approximate ("about", "~"), said to be what something took, cost or
# read, or said to be so much faster or dearer; a duration in minutes or hours is always one (no
# setting of the lab is that long). A threshold or a setting (a 95% interval, a 50 ms slice,
# 10 000 sleepers) is a definition, not a measurement.
_NUMBER = r"\d[\d,.]*(?: \d{3}\b)*(?:\s*(?:[–-]|to)\s*\d[\d,.]*(?: \d{3}\b)*)?"
_SPELLED = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|forty|fifty)"
_DURATION = r"ns|µs|us|ms|s|secs?|seconds?|mins?|minutes?|h|hours?|days?"
_UNIT = rf"(?:{_DURATION}|%|percent|×|x|times|[KMG]i?B|bytes|inches)(?![\w/])"
_HEDGE = r"(?:\b(?:about|roughly|around|nearly|almost|approximately|some)\s+|~\s*)"
_VERB = r"\b(?:took|takes|taking|costs?|cost|paid|pays|spent|spends|read|reads|measured|counted)\s+"
# a count's noun: any word but a preposition, an article or a verb of being
_NOUN = r"(?!(?:of|to|in|at|on|over|per|a|an|the|and|or|is|are|by|for|from)\b)[a-zA-Z][\w-]*"
MEASURED = re.compile(
    rf"(?:{_HEDGE}|{_VERB}(?:{_HEDGE})?)(?:{_NUMBER}\s*(?:{_UNIT}|{_NOUN})|{_SPELLED}\s+"
    rf"(?:{_DURATION})\b)|"
    rf"(?<![\w.]){_NUMBER}\s*(?:%|×|x|times|percent) (?:faster|slower|cheaper|dearer|more|less|"
    rf"fewer|ahead|behind|as (?:fast|much|many))\b|"
    rf"(?<![\w.]){_NUMBER}\s*(?:mins?|minutes?|hours?)\b|"
    rf"(?<![\w.])\d[\d,]* of \d[\d,]* {_NOUN}",  # so many of so many things: a count read
    re.I,
)
# Where a figure comes from: the command and the date that gave it, or the committed data.
DATED = (re.compile(r"`[^`]*(python3? -m|nox -s) [^`]+`"), re.compile(r"\b20\d\d-\d\d-\d\d\b"))
DATA = re.compile(r"\breports/[\w./*-]+\.(json|csv|md)\b")
# READMEs this change may not edit (another's work in flight), with the figures they still type.
PENDING = {"bench/README.md": ("roughly 30–45 minutes", "about 1.4 GB")}


def prose_places(root: Path = ROOT) -> list[Path]:
    """Every file where the lab's prose lives: each README, and the docstrings and comments of
    every Python module (the template's, the essences', the noxfile's, the tests') and CI's."""
    found = [
        p
        for p in root.rglob("*")
        if (p.name == "README.md" or p.suffix == ".py")
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and "reports" not in p.relative_to(root).parts
    ]
    return sorted([*found, root / ".ci" / "run"])


def prose_of(path: Path) -> str:
    """The prose of a file: a README without its code blocks, a module's docstrings and
    comments, a shell script's comments."""
    text = path.read_text()
    if path.suffix == ".md":
        return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    if path.suffix == ".py":
        return prose_of_python(path)
    return "\n".join(re.findall(r"^\s*# ?(.*)$", text, flags=re.M))


def typed_figures(text: str) -> list[str]:
    """Each measured figure typed outside a rendered block without its command and date or
    the committed data it was read from."""
    found = []
    for paragraph in re.split(r"\n\s*\n|\n\s*- ", reading.BLOCK.sub("", text)):
        if all(p.search(paragraph) for p in DATED):
            continue
        if any((ROOT / m[0]).exists() or list(ROOT.glob(m[0])) for m in DATA.finditer(paragraph)):
            continue
        found += [f"{m[0]!r} in {paragraph.strip()[:200]!r}" for m in MEASURED.finditer(paragraph)]
    return found


@pytest.mark.parametrize("path", prose_places(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_prose_types_a_measured_figure(path):
    found = typed_figures(prose_of(path))
    for pending in PENDING.get(str(path.relative_to(ROOT)), ()):
        assert any(pending in f for f in found), f"{path}: no longer types {pending!r}: unlist it"
        found = [f for f in found if pending not in f]
    assert not found, "\n".join(found)


# The guards catch what they are for: a false sentence planted where prose lives.
def _planted(tmp_path: Path, source: Path, text: str) -> Path:
    copy = tmp_path / source.name
    copy.write_text(source.read_text() + text)
    return copy


@pytest.mark.parametrize("name", ESSENCES)
def test_a_false_generalisation_planted_in_an_essence_comment_fails(tmp_path, name):
    essence = ROOT / "loops" / name / "essence.py"
    assert not faults(essence)
    planted = _planted(tmp_path, essence, "\n# Every loop waits for readiness before it reads.\n")
    assert any("Every loop waits for readiness" in f for f in faults(planted))
    planted = _planted(tmp_path, essence, "\n# All the essences use the standard library only.\n")
    assert any("All the essences" in f for f in faults(planted))
    planted = _planted(tmp_path, essence, "\n# Only completions does not wait for readiness.\n")
    wanted = sorted(n for n in DECLARED if not waits_for_readiness(n))
    assert any(f"not {wanted}" in f for f in faults(planted)), faults(planted)


TEMPLATE = sorted((ROOT / "loops" / "_template").glob("*"))


@pytest.mark.parametrize("path", TEMPLATE, ids=lambda p: p.name)
def test_a_false_generalisation_planted_in_the_template_fails(tmp_path, path):
    assert not faults(path)
    mark = "\n# " if path.suffix == ".py" else "\n"
    planted = _planted(tmp_path, path, f"{mark}The scaffold takes any of the three styles.\n")
    wanted = f"three styles, but there are {len(STYLES)}"
    assert any(wanted in f for f in faults(planted)), faults(planted)
    planted = _planted(tmp_path, path, f"{mark}Each home-made loop refuses a blocking socket.\n")
    assert any("refuses a blocking socket" in f for f in faults(planted)), faults(planted)


PLANTED_FIGURES = [
    "The suite runs in about 3 minutes here.",
    "The full run took 2 hours.",
    "A turn takes roughly 40 µs.",
    "Its idle CPU is about 3.1%.",
    "uvloop is 2.5× faster than asyncio.",
    "A request costs ~12 syscalls.",
    "The matrix ran for 10 minutes.",
]


@pytest.mark.parametrize("path", reading.readmes(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_typed_figure_planted_in_any_readme_fails(path):
    text = prose_of(path)
    before = len(typed_figures(text))
    for figure in PLANTED_FIGURES:
        assert len(typed_figures(f"{text}\n\n{figure}\n")) == before + 1, figure
    dated = "It ran in about 10 minutes (`python -m pytest conformance`, 2026-12-06)."
    assert len(typed_figures(f"{text}\n\n{dated}\n")) == before
    sourced = "trio paid about 240 µs per sleeper (reports/results/full/sleep.json)."
    assert len(typed_figures(f"{text}\n\n{sourced}\n")) == before


def test_a_typed_figure_planted_in_a_docstring_or_comment_fails(tmp_path):
    module = ROOT / "loops" / "callbacks" / "reactor.py"
    assert not typed_figures(prose_of(module))
    for figure in PLANTED_FIGURES:
        planted = _planted(tmp_path, module, f"\n# {figure}\n")
        assert typed_figures(prose_of(planted)), figure
        planted = _planted(tmp_path, module, f'\n\ndef f():\n    """{figure}"""\n')
        assert typed_figures(prose_of(planted)), figure


@pytest.mark.parametrize("claim", range(len(CLAIMS)))
def test_a_variant_whose_declarations_differ_fails_naming_each_sentence(monkeypatch, claim):
    """A new variant, `mine`, that has a varying property (refuses blocking sockets, does not
    wait for readiness, needs a library): every sentence that lists the loops with it, in every
    text, no longer names them all, and the test names each of those sentences."""
    pattern, has, among = CLAIMS[claim]
    differing = (pattern, lambda n: n == "mine" or has(n), [*among, "mine"])
    claims = [differing if i == claim else c for i, c in enumerate(CLAIMS)]
    monkeypatch.setattr(sys.modules[__name__], "CLAIMS", claims)
    matched = [(path, s) for path in texts() for s in sentences(path) if pattern.search(s)]
    assert matched, f"no sentence makes the claim {pattern.pattern!r}: unlist it"
    for path, sentence in matched:
        found = faults(path)
        assert any(repr(sentence) in f and "'mine'" in f for f in found), (sentence, found)


@pytest.mark.timeout(300)
def test_a_new_variant_fails_the_sentences_it_makes_false(tmp_path):
    """A real scaffold (coroutines style: it refuses a blocking socket) in a fresh clone: the
    sentence that lists the loops refusing blocking sockets no longer names them all, and the
    test there fails naming it."""
    import subprocess

    from tests.clones import fresh_clone

    clone = fresh_clone(tmp_path / "lab")
    subprocess.run(
        [sys.executable, "-m", "loops._template", "demo", "--style", "coroutines"],
        cwd=clone, check=True, capture_output=True,
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_prose.py", "-q", "-p", "no:cacheprovider",
         "-k", "not new_variant"],
        cwd=clone, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode != 0, done.stdout[-2000:]
    assert "'demo'" in done.stdout and "blocking sockets refused by" in done.stdout, done.stdout


# -- renderers say only what their data says ---------------------------------------------------
# A page's sentence typed in its renderer goes stale when the data or the declarations change
# shape: a figure (a size, a share, a count of repetitions, an interpreter's version) comes from
# the data or the declaration it describes, and a comparison between loops is chosen by the data
# (a branch, a table of words keyed by what the data says), never typed as a standing fact.
RENDERERS = [
    *sorted((ROOT / "bench" / "render").glob("*.py")),
    ROOT / "conformance" / "matrix.py",
    ROOT / "timeline" / "render.py",
    *sorted((ROOT / "htmlreport").glob("*.py")),
]
RENDERED_FIGURE = re.compile(
    r"\ba (?:million|thousand)\b|"
    r"(?<![\w.{\[^])(?:\d[\d,.]*(?: \d{3}\b)*|fifty|twenty|hundred)\s*"
    r"(?:%|×|times\b|µs\b|ms\b|s\b|KiB\b|MiB\b|GiB\b|minutes?\b|hours?\b|requests\b|"
    r"connections\b|tasks\b|sleepers\b|rows\b|workers\b|cores?\b|repetitions\b)|"
    r"\bPython 3\.\d+",
    re.I,
)
COMPARED = re.compile(
    rf"\b({'|'.join(map(re.escape, NAMES))})\b[^.]*"
    r"\b((faster|slower|cheaper|dearer) than|ahead of|behind|level with)\b",
)
# Figures a renderer may type: facts of the world its data does not hold, each with its source.
DEFINITIONS = {
    "15 minutes": "the load average's windows (1, 5 and 15 minutes): proc(5), /proc/loadavg",
}


def typed_in_renderer(path: Path) -> list[str]:
    """Each figure, and each comparison of loops outside a branch, typed in a string of `path`
    (its docstrings aside: they describe the code, not the page)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    chosen = {  # strings a branch or a table of words picks by what the data says
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If | ast.IfExp | ast.Dict | ast.Match)
        for inner in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if id(node) in docstrings or " " not in node.value:
            continue
        for match in RENDERED_FIGURE.finditer(node.value):
            if match[0] not in DEFINITIONS:
                found.append(f"line {node.lineno}: {match[0]!r} in {node.value[:160]!r}")
        if id(node) not in chosen and COMPARED.search(node.value):
            found.append(f"line {node.lineno}: a comparison typed as fact: {node.value[:160]!r}")
    return found


@pytest.mark.parametrize("path", RENDERERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_renderer_types_what_its_data_says(path):
    found = typed_in_renderer(path)
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "planted",
    [
        'TITLE = f"sleepers (N), 90% cancelled, {n} of them"\n',
        'NOTE = "Echo at 1 KiB × 100 connections"\n',
        'NOTE = f"Parts told apart on Python 3.12, {how}"\n',
        'NOTE = f"{rows}: uvloop stays ahead of asyncio here"\n',
        'NOTE = "the soak: a million echo requests per case"\n',
    ],
)
def test_a_figure_or_comparison_typed_into_a_renderer_fails(tmp_path, planted):
    renderer = ROOT / "bench" / "render" / "scale.py"
    copy = tmp_path / renderer.name
    copy.write_text(renderer.read_text() + "\n" + planted)
    assert len(typed_in_renderer(copy)) > len(typed_in_renderer(renderer))


# -- one statement, every copy ------------------------------------------------------------------
# A fact the lab states in several places (the glossary, an essence's comment, a docstring, the
# root README) is declared once here: what a sentence about it speaks of, as groups of words of
# which a sentence has one each, in any order and any form (its meaning, not its wording), and
# the condition the fact cannot lose, which every copy keeps in its sentence or paragraph. Each
# place is found by what it says, so a fix made to one copy and not to the others fails here
# naming the others.
def words(sentence: str) -> set[str]:
    """The sentence's words, lower case, a plural or verb ending taken off ("throws" = "throw")."""
    found = set()
    for word in re.findall(r"[a-z_]+", sentence.lower()):
        for ending in ("ing", "ed", "es", "s"):
            if word.endswith(ending) and len(word) - len(ending) >= 3:
                word = word[: -len(ending)]
                break
        found.add(word)
    return found


def paragraphs(path: Path) -> list[str]:
    """The paragraphs of a file's prose (a list's item is one), each on one line."""
    return _paragraphs(prose_of(path))


@functools.cache  # by text: read once for every fact
def _paragraphs(text: str) -> list[str]:
    text = reading.BLOCK.sub("", text)
    return [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n|\n\s*- ", text)]


@dataclass(frozen=True)
class Fact:
    source: str  # where the lab states it in full
    about: tuple[frozenset[str], ...]  # a sentence about it has a word of each group
    # what every copy keeps, in its sentence or the rest of its paragraph: the conditions
    keeps: re.Pattern | tuple[re.Pattern, ...]
    per_loop: bool = False  # it varies by loop: in a loop's own folder, a copy speaks for it

    def copies(self, paths: list[Path]) -> list[tuple[Path, str, str]]:
        """(path, sentence, its paragraph) for each sentence about the fact."""
        return [
            (path, sentence, paragraph)
            for path in paths
            for paragraph in paragraphs(path)
            for sentence in re.split(r"(?<=[.!?;])\s+", paragraph)
            if all(words(sentence) & group for group in self.about)
        ]

    def kept(self, text: str) -> bool:
        keeps = self.keeps if isinstance(self.keeps, tuple) else (self.keeps,)
        return all(pattern.search(text) for pattern in keeps)


def _of(*groups: str) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(words(group)) for group in groups)


FACTS = {
    # A loop's ready queue runs in its next stage 3: this turn's or the next's.
    "when the ready queue runs": Fact(
        "loops/README.md, Words: ready, ready queue",
        _of("_ready call_soon", "turn pass iteration tick", "next"),
        re.compile(
            r"batch|stage [123]|this (turn|iteration)|call_soon (calls|would)|"
            r"callback that schedules",
            re.I,
        ),
    ),
    # How a cancellation arrives differs between loops: a copy names the loops it speaks for.
    "how a cancellation arrives": Fact(
        "loops/README.md, Words: cancellation, and its Cancellation section",
        _of("cancel cancels cancellation cancelled", "throw thrown throwing"),
        re.compile(rf"{NAMED.pattern}|\bthis loop\b|#cancellation|\bmay\b", re.I),
        per_loop=True,
    ),
    # The GIL lets one thread run Python at a time in CPython's default build, not without it.
    "what the GIL serialises": Fact(
        "loops/README.md, step 0 and Words: GIL",
        _of("gil", "one", "time once"),
        re.compile(r"default build|free-threaded", re.I),
    ),
    # roundrobin's socket call starts with a checkpoint tick, but for two fenced cases
    # (_drained, _reply_in_turn).
    "when roundrobin's socket call checkpoints": Fact(
        "loops/roundrobin/README.md, Fairness with I/O and its two exceptions",
        _of("socket", "call calls", "checkpoint checkpoints", "tick ticks roundrobin"),
        (
            re.compile(r"_drained|short read|two cases below|two fenced exceptions", re.I),
            re.compile(r"_reply_in_turn|right after its `?recv|two cases below|two fenced", re.I),
        ),
    ),
}
# Copies in loop code another change is rewriting, to keep the condition when it lands.
FACT_PENDING = {
    "loops/roundrobin/scheduler.py": "a socket call is a checkpoint, then maybe a readiness wait",
}


def _own_loop(path: Path) -> bool:
    """Whether `path` is in a variant's own folder, where what it says is said of that variant."""
    return path.is_relative_to(ROOT / "loops") and path.parent.name in VARIANTS


def lost_conditions(paths: list[Path]) -> list[str]:
    """Each copy of a declared fact that has lost the fact's condition."""
    return [
        f"{path}: {name} ({fact.source}): {sentence!r}"
        for name, fact in FACTS.items()
        for path, sentence, paragraph in fact.copies(paths)
        if not (fact.kept(paragraph) or (fact.per_loop and _own_loop(path)))
    ]


PLACES = [p for p in prose_places() if p.suffix in (".md", ".py")]


def test_every_copy_of_a_declared_fact_keeps_its_condition():
    found = lost_conditions(PLACES)
    for path, pending in FACT_PENDING.items():
        assert any(path in f and pending in f for f in found), f"{path}: {pending!r} is gone"
        found = [f for f in found if not (path in f and pending in f)]
    assert not found, "\n".join(found)


def test_each_declared_fact_is_found_in_more_than_one_place():
    for name, fact in FACTS.items():
        where = {path for path, _, _ in fact.copies(PLACES)}
        assert len(where) > 1, f"{name}: found only in {where}: no copies to keep together"


@pytest.mark.parametrize(
    ("name", "planted"),
    [
        ("when the ready queue runs", "A callback queued with call_soon runs at the next turn."),
        ("how a cancellation arrives", "Cancelling a task throws an exception into it."),
        ("what the GIL serialises", "The GIL lets one thread run Python at a time."),
        (
            "when roundrobin's socket call checkpoints",
            "In roundrobin every socket call starts with a checkpoint tick.",
        ),
    ],
)
def test_a_copy_that_lost_the_condition_fails_wherever_it_is_worded(tmp_path, name, planted):
    for path in (ROOT / "loops" / "traps" / "essence.py", ROOT / "workloads" / "README.md"):
        mark = "\n# " if path.suffix == ".py" else "\n\n"
        copy = _planted(tmp_path, path, f"{mark}{planted}\n")
        assert any(name in f for f in lost_conditions([copy])), (path, lost_conditions([copy]))
