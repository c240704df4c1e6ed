"""Debian's root (machine/debian_root.py): the mirror read from apt's sources, the host's pip
configuration carried in, made once, and no mount left behind whatever the command inside does.

The tests that enter the root need it made (``python3 -m nox -s pythons``) and root privileges;
without them they skip, saying so. Making the root is not a test: it downloads a few hundred MB.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from machine import debian_root, interpreters


def test_the_mirror_is_the_debian_archive_apt_uses(tmp_path):
    """One-line and deb822 sources alike; the security archive and a vendor's are not it."""
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        "# deb http://old.example/debian bookworm main\n"
        "deb http://security.example/debian-security bookworm-security main\n"
    )
    (tmp_path / "sources.list.d" / "vendor.list").write_text(
        "deb [arch=amd64] https://vendor.example/apt stable main\n"
    )
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\nComponents: main\n"
    )
    assert debian_root.mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    with pytest.raises(debian_root.CannotMake, match="no Debian archive"):
        debian_root.mirror(tmp_path)


def test_the_pip_configuration_names_what_must_be_reachable_inside(tmp_path, monkeypatch):
    """find-links folders, a local index (with the files its pages link to, beside `simple`),
    and the files the settings name; not a remote index, not a path that does not exist."""
    (tmp_path / "wheels").mkdir()
    (tmp_path / "index" / "simple").mkdir(parents=True)
    (tmp_path / "ca.pem").write_text("")
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\n"
        f"find-links = {tmp_path / 'wheels'}\n"
        f"extra-index-url = file://{tmp_path / 'index' / 'simple'} https://pypi.example/simple\n"
        f"constraint = {tmp_path / 'missing.txt'}\n"
    )
    monkeypatch.setattr(debian_root, "PIP_FILES", (conf,))
    for name in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CERT", str(tmp_path / "ca.pem"))
    found = debian_root.pip_paths()
    assert set(found) == {tmp_path / "ca.pem", tmp_path / "wheels", tmp_path / "index"}


def test_why_it_cannot_be_made_is_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "needs root privileges" in " ".join(debian_root.problems())


def test_a_made_root_is_not_made_again(tmp_path):
    (tmp_path / debian_root.STAMP).write_text(debian_root.wanted() + "\n")
    said: list[str] = []
    assert debian_root.make(said.append, tmp_path) == tmp_path
    assert said == [f"Debian root ready at {tmp_path} (nothing to do; delete it to make it again)"]


def test_inside_the_root_nothing_is_rooted(monkeypatch):
    """The noxfile re-runs a session inside the root; there, the same noxfile must not send
    it into the root again."""
    monkeypatch.setenv(debian_root.INSIDE, "1")
    assert interpreters.rooted() == []


@contextlib.contextmanager
def no_mount_left():
    """Asserts this namespace's mount table is the same after the block as before it."""
    before = Path("/proc/self/mountinfo").read_text()
    yield
    assert Path("/proc/self/mountinfo").read_text() == before


needs_root = pytest.mark.skipif(
    debian_root.inside() or not debian_root.ready() or debian_root.problems() != [],
    reason=f"Debian's root is not made at {debian_root.ROOT} (python3 -m nox -s pythons), "
    "cannot be entered here, or these tests run inside it",
)


@needs_root
def test_a_command_inside_sees_what_the_lab_needs_and_leaves_no_mount():
    """/proc, /dev with /dev/pts, the checkout at its own path; gone after, on success and on
    failure alike."""
    checkout = debian_root.checkout()
    with no_mount_left():
        done = debian_root.run(
            ["sh", "-c", "cat /proc/self/mountinfo; test -e pyproject.toml && pwd"],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        mounted = {line.split()[4] for line in done.stdout.splitlines()[:-1]}
        assert {"/proc", "/dev", "/dev/pts", str(checkout)} <= mounted
        assert done.stdout.splitlines()[-1] == str(checkout)
    with no_mount_left():
        assert debian_root.run(["sh", "-c", "exit 3"]).returncode == 3
    with no_mount_left():
        done = debian_root.run(["no-such-command"], capture_output=True)
        assert done.returncode != 0


@needs_root
def test_each_of_debians_pythons_starts_inside():
    for version in debian_root.PYTHONS:
        done = debian_root.run(
            [f"python{version}", "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        assert done.stdout.strip() == str(tuple(int(p) for p in version.split("."))), done


@needs_root
def test_the_bench_measures_debians_python_inside_the_root_as_its_own_build():
    """`--python 3.14` on a host without 3.14 (or `debian-3.13` beside pyenv's): the venv made
    in the root, started through its in-root script, named debian-3.X in the results."""
    from bench import venvs

    if not (venvs.VENVS / "bench-debian-3.14" / "lab-requirements.sha256").exists():
        pytest.skip("no .venvs/bench-debian-3.14 yet (python -m bench run --python 3.14 makes it)")
    spec = "3.14" if interpreters.find("3.14") is None else "debian-3.14"
    found = venvs.interpreter(spec, lambda line: None)
    assert found.version == "debian-3.14"
    assert found.executable.endswith("bench-debian-3.14/in-root")
    assert found.environment["python"].startswith("3.14.")
    assert "--prefix=/usr" in found.environment["python_config_args"]
    assert "asyncio" in found.styles and "curio" in found.unavailable


def test_nox_selects_the_root_sessions():
    """`nox -s pythons` is selected though no interpreter is named; a version only the root has
    gets its sessions under the usual names."""
    import sys

    pytest.importorskip("nox", reason="nox is not installed in this interpreter")

    def selected(session: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "nox", "-l", "-s", session],
            cwd=debian_root.checkout(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        return [line.split()[1] for line in done.stdout.splitlines() if line.startswith("* ")]

    assert selected("pythons") == ["pythons"]
    for version in interpreters.rooted():
        assert selected(f"conformance-{version}") == [f"conformance-{version}"]
