"""Every command the READMEs document runs as written, in a fresh clone, as a user would.

The documented commands are the lines of the shell code blocks (```sh, ```bash, ```shell,
```console) of the root README.md, loops/README.md and bench/README.md, read at collection; a
command shown elsewhere (a table, a sentence) is reference, not a step. ``\\`` continues a line,
``#`` starts a comment, and a line that sets the shell's state (``. .venv/bin/activate``,
``cd``, ``export``) holds for its block's later lines.

They run in document order in one fresh ``git clone`` of this checkout (uncommitted changes to
tracked files applied), through bash, in a bare environment: a fresh venv with nothing
installed, so nox is there only because the README's own ``python3 -m pip install nox`` put it
there. A command documented to fail must leave the tree as it found it. A long one runs with a
declared smaller scope (``SCOPE``), a few are skipped with their reason (``SKIP``); the rest run
exactly as written and must exit 0. One nox command naming several sessions runs as one command
per session (nox hands the same arguments after ``--`` to each). It runs with the rest of ``nox
-s tests`` (so in CI), under a timeout that guards against a hang.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.clones import bare_environment, fresh_clone, tree_state

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "loops/README.md", "bench/README.md")
FENCE = re.compile(r"^```(sh|bash|shell|console)\s*$")
INSIDE = "LAB_DOCUMENTED_COMMANDS"  # set in the commands' environment: no test runs itself

# A session's smaller scope: the arguments it gets when a documented command gives it none.
SCOPE = {
    "conformance": ["--loop", "callbacks"],  # the whole suite, on one loop
    # The session runs `pytest tests ARGS`: -k picks the discovery tests (all: this one among them).
    "tests": ["-k", "test_discovery"],
    "bench": ["--loop", "callbacks", "--workload", "sleep"],  # one loop, one workload
    "timeline": ["--loop", "callbacks"],  # re-records one loop's runs, renders the page
}

# Commands that are not run, by a pattern of the command, with the reason.
SKIP = {
    r"^PYENV_VERSION=": "picks nox's interpreter through pyenv's shims, which a PATH led by a "
    "venv (as under `nox -s tests`) bypasses; `-p 3.X` and `session-3.X` run the same sessions",
}

# Commands whose documented outcome is a failure, by a pattern, with what the output must say.
EXPECT_FAILURE = {
    r"nox -s conformance -- --loop demo\b": "to implement next",  # a fresh scaffold
}


@dataclass(frozen=True)
class Command:
    document: str
    line: int
    text: str  # as documented, continuations joined and the comment dropped
    setup: tuple[str, ...] = ()  # the block's earlier lines that set the shell's state


# A line that changes the shell it runs in, not the tree: it holds for the block's later lines.
STATEFUL = re.compile(r"^(\.|source|cd|export)\s")


def documented_commands(root: Path = ROOT) -> list[Command]:
    """The commands of the shell code blocks of DOCUMENTS, in document order."""
    commands = []
    for document in DOCUMENTS:
        path = root / document
        if not path.is_file():
            continue
        fenced, pending, start, setup = False, "", 0, ()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.startswith("```"):
                fenced, setup = bool(FENCE.match(line)) and not fenced, ()
                continue
            if not fenced:
                continue
            code = re.sub(r"(^|\s)#.*$", "", line).strip()
            start = start or number
            if code.endswith("\\"):
                pending += code[:-1] + " "
                continue
            text = (pending + code).strip()
            if text:
                commands.append(Command(document, start, text, setup))
                if STATEFUL.match(text):
                    setup = (*setup, text)
            pending, start = "", 0
    return commands


def nox_sessions(text: str) -> tuple[str, list[str], list[str], list[str]] | None:
    """A `... python3 -m nox [options] -s A B [-- args]` command split into (what comes before
    nox and nox itself, its other options, its sessions, its arguments); None for another
    command."""
    before, found, after = text.rpartition("python3 -m nox ")
    if not found:
        return None
    words = shlex.split(after)
    args = words[words.index("--") + 1 :] if "--" in words else []
    words = words[: words.index("--")] if "--" in words else words
    sessions, options, taking = [], [], False
    for word in words:
        if word in ("-s", "--session", "--sessions"):
            taking = True
        elif word.startswith("-"):
            taking = False
            options.append(word)
        elif taking:
            sessions.append(word)
        else:
            options.append(word)
    return before + found, options, sessions, args


def as_run(text: str) -> list[str]:
    """What runs for one documented command: itself, or one command per nox session, each
    given its SCOPE when the documented command passes the sessions no arguments."""
    split = nox_sessions(text)
    if split is None:
        return [text]
    head, options, sessions, args = split
    if not sessions or (args and len(sessions) == 1):
        return [text]
    runs = []
    for session in sessions:
        scoped = args or SCOPE.get(re.sub(r"-3\.\d+$", "", session), [])
        tail = f" -- {shlex.join(scoped)}" if scoped else ""
        runs.append(f"{head}{shlex.join([*options, '-s', session])}{tail}")
    return runs


def _matching(table: dict[str, str], text: str) -> str | None:
    return next((value for pattern, value in table.items() if re.search(pattern, text)), None)


def _missing_interpreter(text: str) -> str | None:
    """The `3.X` a command names (`session-3.X`, `-p 3.X`) that this machine lacks, if any."""
    from machine import interpreters

    for version in re.findall(r"(?:-p\s+|--pythons?[=\s]\s*|\w-)(3\.\d+)\b", text):
        if interpreters.find(version) is None:
            return version
    return None


COMMANDS = documented_commands()


def test_the_readmes_document_commands_and_every_declaration_is_used():
    """The extraction finds the documented verbs, and no SKIP or EXPECT_FAILURE entry is stale."""
    texts = [c.text for c in COMMANDS]
    assert any("nox -s new" in t for t in texts), texts
    assert any("nox -s lint conformance tests" in t for t in texts), texts
    for pattern in [*SKIP, *EXPECT_FAILURE]:
        assert any(re.search(pattern, t) for t in texts), f"no documented command matches {pattern}"


def test_a_nox_command_of_several_sessions_runs_as_one_per_session_at_its_scope():
    runs = as_run("python3 -m pip install nox && python3 -m nox -s lint conformance tests")
    assert runs == [
        "python3 -m pip install nox && python3 -m nox -s lint",
        "python3 -m pip install nox && python3 -m nox -s conformance -- --loop callbacks",
        "python3 -m pip install nox && python3 -m nox -s tests -- -k test_discovery",
    ]
    assert as_run("python3 -m nox -p 3.12 -s tests") == [
        "python3 -m nox -p 3.12 -s tests -- -k test_discovery"
    ]
    assert as_run("python3 -m nox -s new -- demo --style coroutines") == [
        "python3 -m nox -s new -- demo --style coroutines"
    ]
    assert as_run("python -m loops.primer") == ["python -m loops.primer"]


def test_a_line_that_sets_the_shell_holds_for_the_blocks_later_lines(tmp_path):
    (tmp_path / "README.md").write_text(
        "```sh\npython3 -m venv .venv\n. .venv/bin/activate   # then\npython -m loops.primer\n```\n"
        "```sh\npython -m loops.primer\n```\n"
    )
    found = documented_commands(tmp_path)
    assert [c.setup for c in found] == [(), (), (". .venv/bin/activate",), ()]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh clone of this checkout, with the working tree's changes to tracked files, and a
    bare environment to run in (nothing installed: the README's own line installs nox)."""
    if os.environ.get(INSIDE):
        pytest.skip("already inside a documented command (a test must not run itself)")
    where = tmp_path_factory.mktemp("documented")
    _python, env = bare_environment(where)
    yield fresh_clone(where / "lab"), {**env, INSIDE: "1"}
    shutil.rmtree(where, ignore_errors=True)


@pytest.mark.timeout(3600)  # a hang guard for the longest slice (the bench's), not a bound
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: f"{c.document}:{c.line}")
def test_documented_command_runs_as_written(clone, command):
    reason = _matching(SKIP, command.text)
    if reason:
        pytest.skip(reason)
    version = _missing_interpreter(command.text)
    if version:
        pytest.skip(f"no CPython {version} on this machine")
    clone, env = clone
    for run in as_run(command.text):
        found = tree_state(clone)
        result = subprocess.run(
            " && ".join([*command.setup, run]), shell=True, executable="/bin/bash", cwd=clone,
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        output = f"$ {run}\n{result.stdout}{result.stderr}"
        says = _matching(EXPECT_FAILURE, run)
        if says:
            assert result.returncode != 0 and says in output, output[-4000:]
            left = tree_state(clone)
            assert left == found, f"{output[-3000:]}\nthe failed command left:\n{left}"
        else:
            assert result.returncode == 0, output[-4000:]
