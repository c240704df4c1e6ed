"""What a measurement ran on: machine, CPU, Python, library versions, commit, code fingerprint.

Every stored session carries this record and every report prints it, because a number without
its machine is not a result. Two fingerprints decide whether stored results can be reused
(see :mod:`bench.store`): the machine's (same host, CPU, cores and Python) and the code's (a
hash of every source file the measurements depend on, so an uncommitted edit counts too).
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import os
import platform
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The packages whose versions change the numbers: the reference loops and the workloads' parts.
LIBRARIES = (
    "uvloop",
    "trio",
    "curio",
    "httptools",
    "selectolax",
    "hdrhistogram",
    "psutil",
)

# The code a measurement depends on: the loops, the workloads, the bench and its machine facts.
CODE_DIRS = ("loops", "workloads", "bench", "machine")


def cpu_model() -> str:
    """The CPU's marketing name, from /proc/cpuinfo where there is one."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_identity() -> dict[str, str]:
    """What tells two CPUs of one marketing name apart: family, model, stepping and microcode
    (a VM's "AMD EPYC" names a family of parts, and a microcode update changes timings)."""
    wanted = {"cpu family": "family", "model": "model", "stepping": "stepping",
              "microcode": "microcode"}  # fmt: skip
    found: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in wanted and wanted[key.strip()] not in found:
                found[wanted[key.strip()]] = value.strip()
    except OSError:
        pass
    return found


def usable_cores() -> list[int]:
    """The cores this process may run on (all of them where affinity is not supported)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def library_versions(names: Iterable[str] = LIBRARIES) -> dict[str, str | None]:
    """The installed version of each distribution named (None where it is not installed)."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _git(*args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip()


def commit() -> dict[str, object]:
    """HEAD's hash and subject, and whether the measured code differs from it."""
    head = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--", *CODE_DIRS)
    return {
        "hash": head,
        "subject": _git("log", "-1", "--format=%s") if head else None,
        "dirty": bool(status) if status is not None else None,
    }


def code_fingerprint(root: Path = ROOT) -> str:
    """A hash of every source file under the measured directories, committed or not."""
    digest = hashlib.sha256()
    for directory in CODE_DIRS:
        for path in sorted((root / directory).rglob("*")):
            if path.suffix in {".py", ".toml"} and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def memory_total() -> int | None:
    try:
        import psutil

        return psutil.virtual_memory().total
    except ImportError:
        return None


def capture() -> dict[str, object]:
    """The environment record stored with every bench session."""
    cores = usable_cores()
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_identity": cpu_identity(),
        # The kernel's release and build string: a VM's new kernel build ("6.18.44-fc-v669" and
        # "-fc-v782") has moved figures as much as a new machine would.
        "kernel_release": os.uname().release,
        "kernel_build": os.uname().version,
        "logical_cores": os.cpu_count(),
        "usable_cores": cores,
        "memory_bytes": memory_total(),
        "virtualisation": virtualisation(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_build": sys.version.replace("\n", " "),
        # How this interpreter was configured (--enable-shared, --enable-optimizations,
        # --with-lto): a comparison across interpreters is fair only within one build family.
        "python_config_args": sysconfig.get_config_var("CONFIG_ARGS"),
        "libraries": library_versions(),
        "commit": commit(),
        "code": code_fingerprint(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def virtualisation() -> str:
    """What this machine runs inside, as far as it can tell: systemd-detect-virt's word for a
    container or a virtual machine, and the CPU's hypervisor flag (a guest of a hypervisor)."""
    found = []
    try:
        said = subprocess.run(
            ["systemd-detect-virt"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        said = ""
    if said and said != "none":
        found.append(said)
    try:
        if " hypervisor" in Path("/proc/cpuinfo").read_text():
            found.append("hypervisor guest")
    except OSError:
        pass
    return ", ".join(found) or "none seen"


def python_build(env: dict) -> str:
    """Who built the interpreter and with which speed options, from its configure line."""
    args = env.get("python_config_args")
    if args is None:
        return "not recorded"
    who = "pyenv" if "/.pyenv/" in args else "Debian" if "--prefix=/usr'" in args else "own"
    flags = [name for flag, name in (("--enable-optimizations", "PGO"), ("--with-lto", "LTO"))
             if flag in args]  # fmt: skip
    return f"{who}{', ' + ' and '.join(flags) if flags else ', no PGO or LTO'}"


def kernel_release(env: dict) -> str | None:
    """The kernel's full release ("6.18.44-fc-v1272"); a session stored before it was recorded
    has it inside its platform string ("Linux-6.18.44-fc-v1272-x86_64-with-glibc2.36")."""
    if env.get("kernel_release"):
        return str(env["kernel_release"])
    system = str(env.get("platform", "")).split("-with-")[0]  # "Linux-<release>-<arch>"
    rest = system.rpartition("-")[0].partition("-")[2]
    return rest or None


def identity(env: dict) -> str:
    """The CPU's family, model, stepping and microcode, as one phrase ("" if not recorded)."""
    found = env.get("cpu_identity") or {}
    parts = [f"{key} {found[key]}" for key in ("family", "model", "stepping") if key in found]
    if "microcode" in found:
        parts.append(f"microcode {found['microcode']}")
    return ", ".join(parts)


def fingerprint(env: dict) -> dict[str, object]:
    """The machine a session ran on, as a reader compares two: the CPU (its name and, where
    recorded, its exact part and microcode) and how many, the memory, the kernel's release
    and build, what it is virtualised by, and the interpreter's build. Differing in any of
    these is another machine."""
    memory = env.get("memory_bytes")
    return {
        "cpu": env.get("cpu"),
        "cpu_identity": identity(env) or "not recorded",
        "cpus": env.get("logical_cores"),
        "memory_gib": round(memory / 2**30) if memory else None,
        "kernel": kernel_release(env),
        "kernel_build": env.get("kernel_build", "not recorded"),
        "virtualisation": env.get("virtualisation", "not recorded"),
        "python_build": python_build(env),
    }


def describe(env: dict) -> str:
    """One machine in a few words: "AMD EPYC (family 25, model 1, stepping 1, microcode
    0x1000065), 2 CPUs, 8 GiB, Linux 6.18.44-fc-v1272, docker, hypervisor guest"."""
    found = fingerprint(env)
    exact = f" ({identity(env)})" if identity(env) else ""
    return (
        f"{found['cpu']}{exact}, {found['cpus']} CPUs, {found['memory_gib']} GiB, "
        f"Linux {found['kernel']}, {found['virtualisation']}"
    )


def same_machine(a: dict, b: dict) -> bool:
    """True where two environments describe one machine: their fingerprints agree on every
    field both recorded (a field one of them did not record, as an interpreter without the
    means to read the memory size, neither matches nor differs)."""
    unknown = (None, "not recorded")
    first, second = fingerprint(a), fingerprint(b)
    return all(
        first[key] == second[key]
        for key in ("cpu", "cpu_identity", "cpus", "memory_gib", "kernel", "kernel_build",
                    "virtualisation")
        if first[key] not in unknown and second[key] not in unknown
    )  # fmt: skip


def by_machine(named: list[tuple[str, dict]]) -> dict[str, list[str]]:
    """Names of figures grouped by the machine their environments describe, in first-seen
    order (a name once per machine; an empty environment is left out)."""
    where: dict[str, list[str]] = {}
    for name, env in named:
        if env and name not in (found := where.setdefault(describe(env), [])):
            found.append(name)
    return where


def machine_key(env: dict) -> tuple:
    """What must match for two sessions to count as the same machine (and interpreter): the
    host's name is no help where every machine is called "vm", so its fingerprint counts."""
    return (
        env.get("host"),
        *fingerprint(env).values(),
        env.get("python"),
        env.get("python_implementation"),
    )
