"""Debian's CPythons 3.13, 3.14 and 3.15 for a host that has none: a root the lab makes once.

``python3 -m nox -s pythons`` (or ``python3 -m machine.debian_root``) builds Debian's forky suite
with ``debootstrap`` into ``ROOT`` (``~/.cache/loop-lab/debian-forky``, outside the repository;
``LAB_DEBIAN_ROOT`` moves it), then a virtualenv with nox inside it. A second run finds the
stamp and does nothing. The host's glibc is too old for these interpreters, so they run only
inside the root: :func:`command` turns an argv into one that runs there, and the noxfile's
``conformance-3.14`` (and every session on a version only the root has) re-runs nox inside it.

What a run inside needs, and how it never leaves a mount behind: each command runs in a mount
namespace of its own (``unshare --mount``), where ``/proc``, ``/dev`` (with ``/dev/pts`` and
``/dev/shm``), the host's ``/tmp``, the checkout and the local package indexes the host's pip
configuration names are mounted, and then ``chroot``; the kernel drops that namespace, and
every mount in it, when the command ends, on success, failure or kill alike. Standard library
only, so the noxfile can import it before any virtual environment exists. The host's pip
configuration (its files and ``PIP_*`` variables) is copied in at every entry, because the
registries are reachable only as configured here. The root carries gcc and the ``-dev``
headers, so a dependency with no wheel for an interpreter (hdrhistogram on 3.15) builds there.
"""

from __future__ import annotations

import configparser
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

# Where the root lives: outside every checkout, shared by the checkouts of one machine.
ROOT = Path(os.environ.get("LAB_DEBIAN_ROOT", Path.home() / ".cache" / "loop-lab" / "debian-forky"))
SUITE = "forky"  # Debian's testing suite: the first to carry python3.14 and python3.15
SCRIPT = "/usr/share/debootstrap/scripts/sid"  # Debian 12's debootstrap serves forky with it
PYTHONS = ("3.13", "3.14", "3.15")  # Debian's interpreters in the root, oldest first
FAMILY = "debian"  # their build family, in every name that could be confused with pyenv's
PACKAGES = (
    *(f"python{v}" for v in PYTHONS),
    *(f"python{v}-venv" for v in PYTHONS),
    *(f"python{v}-dev" for v in PYTHONS),  # headers: a dependency without a wheel builds here
    *(f"libpython{v}-testsuite" for v in PYTHONS),  # CPython's own asyncio tests
    "gcc",
    "ca-certificates",
    "git",  # the Environment's commit line, read from the bind-mounted checkout
    "strace",  # the bench's cost anatomy (syscalls per request)
    "wrk",  # the http workload's load generator
)
TOOLS = Path("/opt/loop-lab/tools")  # inside the root: the virtualenv that holds nox
TOOLS_PYTHON = "3.13"  # the interpreter of that virtualenv
STAMP = ".loop-lab-ready"  # in the root: the hash of PACKAGES, written when the root is done
INSIDE = "LAB_IN_DEBIAN_ROOT"  # set inside the root, so nothing there tries to enter it again
PIP_FILES = (
    Path("/etc/pip.conf"),
    Path("/etc/xdg/pip/pip.conf"),
    Path.home() / ".config" / "pip" / "pip.conf",
    Path.home() / ".pip" / "pip.conf",
)
HOST_FILES = (Path("/etc/resolv.conf"), Path("/etc/hosts"))  # names resolve as on the host


class CannotMake(RuntimeError):
    """The root cannot be made or entered here: the one line says why."""


def inside() -> bool:
    return bool(os.environ.get(INSIDE))


def wanted() -> str:
    return hashlib.sha256(" ".join(PACKAGES).encode()).hexdigest()[:16]


def ready(root: Path = ROOT) -> bool:
    stamp = root / STAMP
    return stamp.exists() and stamp.read_text().strip() == wanted()


def python(version: str, root: Path = ROOT) -> Path | None:
    """`/usr/bin/python3.X` as seen inside the root, if the root is made and holds it."""
    return Path(f"/usr/bin/python{version}") if ready(root) and version in PYTHONS else None


# ------------------------------------------------------------------------------------------
# The mirror: the one the machine's apt uses, read at run time, never written in the code.


def mirror(sources: Path = Path("/etc/apt")) -> str:
    """The first Debian archive URI in apt's sources (one-line and deb822 formats)."""
    if url := os.environ.get("LAB_DEBIAN_MIRROR"):
        return url
    files = [sources / "sources.list", *sorted((sources / "sources.list.d").glob("*.list"))]
    files += sorted((sources / "sources.list.d").glob("*.sources"))
    for path in files:
        try:
            text = path.read_text()
        except OSError:
            continue
        uris = re.findall(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.M)
        uris += [u for line in re.findall(r"^URIs:(.*)$", text, re.M) for u in line.split()]
        for uri in uris:
            if uri.rstrip("/").endswith("/debian"):  # the archive, not -security or a vendor's
                return uri
    raise CannotMake(f"no Debian archive in {sources}/sources.list(.d): set LAB_DEBIAN_MIRROR")


# ------------------------------------------------------------------------------------------
# What a command inside needs mounted, and the host files copied in.


def checkout() -> Path:
    return Path(__file__).resolve().parent.parent


def pip_paths() -> list[Path]:
    """The local directories the host's pip configuration reads (find-links, file:// indexes)
    and the files it names (a CA bundle, a constraints file)."""
    values: list[str] = [v for k, v in os.environ.items() if k.startswith("PIP_")]
    for path in PIP_FILES:
        config = configparser.ConfigParser()
        try:
            config.read(path)
        except configparser.Error:
            continue
        values += [v for section in config.sections() for v in config[section].values()]
    found = []
    for value in values:
        for word in value.split():
            path = Path(word.removeprefix("file://"))
            if path.name == "simple":  # a local index: its pages link to files beside it
                path = path.parent
            if word.startswith(("/", "file:///")) and path.exists() and path not in found:
                found.append(path)
    return found


def mounts(work: Path | None = None) -> list[tuple[str, Path, str]]:
    """(kind, host path, options) of each mount a command inside needs, in mount order."""
    work = work or checkout()
    found = [("proc", Path("/proc"), ""), ("rbind", Path("/dev"), "")]
    # The host's /tmp: a file a process inside writes there (a workload's --json, a matrix)
    # is where the process outside that asked for it looks.
    found += [("bind", Path("/tmp"), ""), ("bind", work, "")]
    common = _git_common_dir(work)  # a worktree's git data lives in the main checkout
    if common and not common.is_relative_to(work):
        found.append(("bind", common, "ro"))
    found += [("bind", path, "ro") for path in pip_paths() if path.is_dir()]
    return found


def _git_common_dir(work: Path) -> Path | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=work, capture_output=True, text=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def copy_host_files(root: Path = ROOT) -> None:
    """Resolver files, pip's configuration files, and the files pip's settings name."""
    files = [*HOST_FILES, *PIP_FILES, *(p for p in pip_paths() if p.is_file())]
    for path in files:
        if path.is_file():
            target = root / path.relative_to("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def shell_script(root: Path, work: Path) -> str:
    """The sh script `command` runs in its own mount namespace: mount, then chroot."""
    lines = ["set -e"]
    for kind, path, options in mounts(work):
        target = shlex.quote(str(root / path.relative_to("/")))
        lines.append(f"mkdir -p {target}")
        if kind == "proc":
            lines.append(f"mount -t proc proc {target}")
        else:
            flag = "--rbind" if kind == "rbind" else "--bind"
            lines.append(f"mount {flag} {shlex.quote(str(path))} {target}")
            if options == "ro":
                lines.append(f"mount -o remount,bind,ro {target}")
    lines.append(
        f'exec chroot {shlex.quote(str(root))} /usr/bin/env --chdir="$LAB_CWD" '
        f"PATH={TOOLS}/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin {INSIDE}=1 "
        '"$@"'
    )
    return "; ".join(lines)


def command(argv: list[str], root: Path = ROOT, work: Path | None = None) -> list[str]:
    """`argv` run inside the root, from the current directory (which must be under the
    checkout), with every mount it needs gone when it ends. The same process id throughout:
    unshare, sh and chroot each exec the next, so a measured server is the process started."""
    work = work or checkout()
    script = shell_script(root, work)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv]


def run(argv: list[str], root: Path = ROOT, cwd: Path | None = None, **kwargs):
    """`argv` run inside the root (a CompletedProcess), from `cwd` (default: the checkout)."""
    copy_host_files(root)
    env = {**os.environ, "LAB_CWD": str(cwd or checkout())}
    return subprocess.run(command(argv, root), env=env, cwd=cwd or checkout(), **kwargs)


# ------------------------------------------------------------------------------------------
# Making the root: once, with progress, saying in one line why it cannot.


def problems() -> list[str]:
    """Why the root cannot be made here (empty: it can)."""
    found = []
    if os.name != "posix" or not hasattr(os, "geteuid"):
        return ["the Debian root needs Linux"]
    if os.geteuid() != 0:
        found.append("needs root privileges (debootstrap, mount and chroot do)")
    for tool, package in (("debootstrap", "debootstrap"), ("unshare", "util-linux")):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            found.append(f"no {tool} (apt-get install {package})")
    if not Path(SCRIPT).exists() and shutil.which("debootstrap"):
        found.append(f"this debootstrap has no {SCRIPT}")
    return found


def make(say: Callable[[str], None] = print, root: Path = ROOT) -> Path:
    """The root, made if it is not: debootstrap, then nox in a virtualenv inside it."""
    if ready(root):
        say(f"Debian root ready at {root} (nothing to do; delete it to make it again)")
        return root
    if why := problems():
        raise CannotMake("; ".join(why))
    if not (root / "usr" / "bin" / f"python{TOOLS_PYTHON}").exists():
        _debootstrap(say, root)
    copy_host_files(root)
    if (root / STAMP).exists():  # made before with other packages: add what is missing
        say(f"[1/3] adding packages to {root}")
        # The archive served here may be a dated snapshot: its Release file expired, still
        # the one debootstrap installed from.
        valid = "Acquire::Check-Valid-Until=false"
        _step(say, "apt-get", _inside(root, "apt-get", "-o", valid, "update", "-q"))
        _step(say, "apt-get", _inside(root, "apt-get", "install", "-y", "-q", *PACKAGES))
    say(f"[2/3] nox in {TOOLS} (python{TOOLS_PYTHON} inside the root)")
    _step(say, "venv", _inside(root, f"python{TOOLS_PYTHON}", "-m", "venv", str(TOOLS)))
    _step(say, "pip", _inside(root, f"{TOOLS}/bin/python", "-m", "pip", "install", "-q", "nox"))
    say("[3/3] checking each interpreter starts")
    for version in PYTHONS:
        done = run([f"python{version}", "-VV"], root, capture_output=True, text=True)
        if done.returncode != 0:
            raise CannotMake(f"python{version} does not start in the root: {done.stderr.strip()}")
        say(f"  python{version}: {done.stdout.strip()}")
    (root / STAMP).write_text(wanted() + "\n")
    say(f"Debian root ready at {root}")
    return root


def _debootstrap(say, root: Path) -> None:
    url = mirror()
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    say(f"[1/3] debootstrap {SUITE} from {url} into {root} (a few hundred MB, about a minute)")
    argv = [
        "unshare", "--mount", "--propagation", "private",  # whatever it mounts goes with it
        "debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
        SUITE, str(partial), url, SCRIPT,
    ]  # fmt: skip
    _step(say, "debootstrap", argv)
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)


def _inside(root: Path, *argv: str) -> list[str]:
    return command(list(argv), root)


def _step(say, what: str, argv: list[str]) -> None:
    """Run one step, echoing its progress lines (debootstrap's I:, pip's), failing in one
    line with the step's last error."""
    env = {**os.environ, "LAB_CWD": str(checkout()), "DEBIAN_FRONTEND": "noninteractive"}
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        cwd=checkout(),
    )  # fmt: skip
    tail: list[str] = []
    per_package = 0
    for line in _lines(process):
        tail = [*tail[-20:], line]
        if PER_PACKAGE.match(line):  # one line per package: every 40th, counted
            per_package += 1
            if per_package % 40 == 0:
                say(f"  {line} ({per_package} package steps so far)")
        elif line.startswith(("I: ", "E: ", "W: ")):
            say(f"  {line}")
    if process.wait() != 0:
        errors = [t for t in tail if t.startswith(("E:", "ERROR", "error"))] or tail or ["?"]
        raise CannotMake(f"{what} failed ({process.returncode}): {errors[-1].strip()}")


PER_PACKAGE = re.compile(r"I: (Retrieving|Validating|Extracting|Unpacking|Configuring) \S+")


def _lines(process: subprocess.Popen) -> Iterator[str]:
    assert process.stdout is not None
    for line in process.stdout:
        yield line.rstrip()


def main(argv: list[str] | None = None) -> int:
    """`python -m machine.debian_root`: make the root; `-- CMD...`: run CMD inside it."""
    args = sys.argv[1:] if argv is None else argv
    try:
        make(lambda line: print(line, flush=True))
        if args[:1] == ["--"]:
            return run(args[1:], cwd=Path.cwd()).returncode
    except CannotMake as error:
        print(f"cannot make the Debian root: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
