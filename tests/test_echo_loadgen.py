"""The echo load generators, native and Python: they catch bad servers, pace, and fall back.

Every server here is a real process on loopback: the misbehaving ones are ``tests.broken_echo``
(plain threads, no loop of the lab's), the faithful one is the ``selectors-floor`` anchor. The
generator runs as a user runs it, ``python -m workloads.echo.load ... --json FILE``, and what
is asserted comes from its record (counts, scheduled against completed requests), never from
how long the test took.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from workloads.echo import loadgen

ROOT = Path(__file__).resolve().parent.parent
NO_COMPILER = shutil.which(loadgen.COMPILER) is None
needs_cc = pytest.mark.skipif(NO_COMPILER, reason="no C compiler here: the native generator")
GENERATORS = (pytest.param("native", marks=needs_cc), "python")


@contextmanager
def served(*command: str):
    """A server process printing 'listening on HOST:PORT'; yields (port, pid), kills it after."""
    process = subprocess.Popen(
        [sys.executable, "-m", *command], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("listening on "), line
        yield int(line.split()[-1].rsplit(":", 1)[1]), process.pid
    finally:
        process.kill()
        process.wait(timeout=10)
        process.stdout.close()


@contextmanager
def server(*command: str):
    """As :func:`served`, yielding the port alone."""
    with served(*command) as (port, _):
        yield port


def load(port: int, tmp_path: Path, *args: str, env: dict | None = None) -> dict:
    """Run the load generator CLI; its record, with its exit status and output added."""
    out = tmp_path / "load.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, "-m", "workloads.echo.load", "--port", str(port)]
    command += ["--timeout", "5", "--json", str(out), *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert out.exists(), done.stdout + done.stderr
    record = json.loads(out.read_text())
    record.update(returncode=done.returncode, stdout=done.stdout, stderr=done.stderr)
    return record


@pytest.fixture(scope="module", autouse=True)
def built():
    """Where a compiler exists, the native generator must build: a compile error fails here
    loudly instead of every native test quietly measuring the Python fallback."""
    if not NO_COMPILER:
        binary, why = loadgen.build()
        assert binary is not None, why


@pytest.mark.timeout(60)
@pytest.mark.parametrize("generator", GENERATORS)
@pytest.mark.parametrize(
    ("mode", "kind"),
    [("flip", "corrupt"), ("extra", "corrupt"), ("drop", "missing"), ("reset", "missing")],
)
def test_a_broken_server_fails_the_run(generator, mode, kind, tmp_path):
    """One bad connection among ten, after some good echoes: the run fails and says what."""
    with server("tests.broken_echo", mode, "--after", "5000") as port:
        args = ("--connections", "10", "--size", "1000", "--duration", "0.5")
        record = load(port, tmp_path, *args, "--generator", generator)
    assert record["generator"] == generator
    assert record["returncode"] == 1, record["stdout"] + record["stderr"]
    assert not record["ok"]
    assert record[kind] == 1 and record["errors"] == 1, record
    assert record["requests"] >= 5, "the other connections went on being served"
    assert "FAILED" in record["stdout"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("generator", GENERATORS)
def test_the_server_cpu_window_leaves_out_accepting_and_closing(generator, processes, tmp_path):
    """A server that burns 0.1 s of CPU per connection as it accepts it and again as it closes
    it: ten connections make 1 s each way, none of it load. The window's server CPU must not
    hold it (a slow accept used to spill in after "ready"; a close, before the sample)."""
    with served("tests.broken_echo", "costly", "--delay", "0.1") as (port, pid):
        args = ("--connections", "10", "--size", "100", "--duration", "0.5", "--rate", "100")
        args += ("--processes", str(processes), "--server-pid", str(pid))
        record = load(port, tmp_path, *args, "--generator", generator)
    assert record["returncode"] == 0 and record["ok"], record["stdout"] + record["stderr"]
    assert record["generator"] == generator and record["requests"] == record["scheduled"] == 50
    # Fifty 100-byte echoes cost milliseconds; one connection's accept or close alone, 0.1 s.
    assert record["server_cpu_s"] < 0.1, record


@pytest.mark.timeout(60)
@pytest.mark.parametrize("generator", GENERATORS)
def test_pacing_holds_the_offered_rate_on_a_server_that_sustains_it(generator, tmp_path):
    """1 000 requests/s over 10 connections for 1 s: every scheduled request, no more."""
    with server("workloads.echo.native", "selectors-floor", "--port", "0") as port:
        args = ("--connections", "10", "--size", "512", "--duration", "1", "--rate", "1000")
        record = load(port, tmp_path, *args, "--generator", generator)
    assert record["returncode"] == 0 and record["ok"], record["stdout"] + record["stderr"]
    assert record["generator"] == generator and record["rate"] == 1000
    # Slots (i + 10k)/1000 s for connection i, within 1 s: exactly 100 per connection.
    assert record["scheduled"] == 1000
    # Never more than scheduled; on a busy machine the generator may itself wake too late for
    # a last slot or two (nothing goes out after the window), so not always every one.
    assert 0.95 * record["scheduled"] <= record["requests"] <= record["scheduled"]
    assert record["kept_rate"] is True
    assert 950 <= record["rate_achieved"] <= 1000


@pytest.mark.timeout(60)
@pytest.mark.parametrize("generator", GENERATORS)
def test_a_server_that_falls_behind_shows_it_in_the_record(generator, tmp_path):
    """5 ms per echo cannot keep 1 000/s on one connection: the rate is not kept, and latency
    counts from the scheduled time, so the queue shows: the k-th echo, scheduled at k ms, comes
    back no sooner than 5k ms."""
    with server("tests.broken_echo", "slow", "--delay", "0.005") as port:
        args = ("--connections", "1", "--size", "100", "--duration", "0.5", "--rate", "1000")
        record = load(port, tmp_path, *args, "--generator", generator)
    assert record["ok"], record["stdout"] + record["stderr"]
    assert record["scheduled"] == 500
    assert record["requests"] < 0.95 * record["scheduled"]
    assert record["kept_rate"] is False
    assert "NOT KEPT" in record["stdout"]
    last = record["requests"] - 1
    assert record["latency_us_max"] >= 4 * last * 1000 * 0.99  # hdr keeps 3 digits


@pytest.mark.timeout(60)
@pytest.mark.parametrize("generator", GENERATORS)
def test_a_warm_up_in_the_same_process_stays_out_of_the_record(generator, tmp_path):
    """--warmup runs the same load first on connections of its own: its requests are not
    counted, and neither is the CPU its ten connections cost the server as they are accepted
    and closed (0.1 s each way, each), only the measured load's."""
    with served("tests.broken_echo", "costly", "--delay", "0.1") as (port, pid):
        args = ("--connections", "10", "--size", "100", "--duration", "0.5", "--rate", "100")
        args += ("--warmup", "0.5", "--server-pid", str(pid))
        record = load(port, tmp_path, *args, "--generator", generator)
    assert record["returncode"] == 0 and record["ok"], record["stdout"] + record["stderr"]
    assert record["requests"] == record["scheduled"] == 50  # the measured half second's alone
    assert record["server_cpu_s"] < 0.1, record


@pytest.mark.timeout(60)
@pytest.mark.parametrize("generator", GENERATORS)
def test_a_warm_up_that_fails_is_the_record_and_says_so(generator, tmp_path):
    """The server resets its first connection, which the warm-up holds: the run fails, and
    its record says the fault came in the warm-up."""
    with server("tests.broken_echo", "reset", "--after", "1000") as port:
        args = ("--connections", "2", "--size", "100", "--duration", "0.5", "--warmup", "0.5")
        record = load(port, tmp_path, *args, "--generator", generator)
    assert record["returncode"] == 1 and not record["ok"], record
    assert record["missing"] == 1 and record["first_error"].startswith("warm-up: "), record


@pytest.mark.timeout(60)
@pytest.mark.parametrize("generator", GENERATORS)
def test_the_mean_latency_is_the_round_trips_mean(generator, tmp_path):
    """5 ms per echo, one connection, closed loop: every round trip takes at least 5 ms, so
    the mean (summed as recorded, not walked out of the histogram) lies between 5 ms and the
    slowest round trip, and the median is no further from it than the spread allows."""
    with server("tests.broken_echo", "slow", "--delay", "0.005") as port:
        args = ("--connections", "1", "--size", "100", "--duration", "0.3")
        record = load(port, tmp_path, *args, "--generator", generator)
    assert record["ok"], record["stdout"] + record["stderr"]
    assert 5000 <= record["latency_us_mean"] <= record["latency_us_max"], record
    assert record["latency_us_p50"] <= 2 * record["latency_us_mean"], record


def _path_without(program: str, tmp_path: Path) -> str:
    """PATH with every directory holding `program` replaced by a copy without it."""
    parts = []
    for index, directory in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if directory and (Path(directory) / program).exists():
            masked = tmp_path / f"path{index}"
            masked.mkdir()
            for entry in Path(directory).iterdir():
                if entry.name != program:
                    (masked / entry.name).symlink_to(entry)
            directory = str(masked)
        parts.append(directory)
    return os.pathsep.join(parts)


@pytest.mark.timeout(60)
def test_without_a_compiler_the_python_generator_runs_and_says_so(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env["PATH"] = _path_without("cc", tmp_path)
    check = subprocess.run(["sh", "-c", "command -v cc"], env=env, capture_output=True)
    assert check.returncode != 0, "cc is still on the PATH"
    with server("workloads.echo.native", "selectors-floor", "--port", "0") as port:
        args = ("--connections", "4", "--size", "1024", "--duration", "0.3")
        record = load(port, tmp_path, *args, env=env)
        assert record["returncode"] == 0 and record["ok"], record["stdout"] + record["stderr"]
        assert record["generator"] == "python" and record["load_loop"] == "uvloop"
        assert "no C compiler" in record["generator_note"]
        notes = [line for line in record["stderr"].splitlines() if "Python generator" in line]
        assert len(notes) == 1 and "no C compiler (cc) on PATH" in notes[0]

        # Asked for by name, the native generator is a usage error instead.
        done = subprocess.run(
            [sys.executable, "-m", "workloads.echo.load", "--port", str(port), "--connections",
             "1", "--size", "1", "--duration", "0.1", "--generator", "native"],
            cwd=ROOT, capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2 and "no C compiler" in done.stderr
    assert not (tmp_path / "cache" / "event-loop-lab").exists() or not any(
        (tmp_path / "cache" / "event-loop-lab").glob("loadgen-*")
    )


def test_a_compile_error_falls_back_with_the_compilers_first_line(tmp_path, monkeypatch):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "cc").write_text("#!/bin/sh\necho 'fatal error: no headers here' >&2\nexit 1\n")
    (fake / "cc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    binary, why = loadgen.build()
    assert binary is None
    assert why == "cc failed on loadgen.c: fatal error: no headers here"
    assert not list((tmp_path / "cache" / "event-loop-lab").glob("*")), "no half-built file left"


@needs_cc
def test_the_build_is_cached_outside_the_source_tree_by_source_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first, why = loadgen.build()
    assert first is not None, why
    assert first.parent == tmp_path / "event-loop-lab"
    stamp = first.stat().st_mtime_ns
    again, _ = loadgen.build()
    assert again == first and again.stat().st_mtime_ns == stamp, "rebuilt although unchanged"
    edited = tmp_path / "loadgen.c"
    edited.write_text(loadgen.SOURCE.read_text() + "\n/* an edit */\n")
    monkeypatch.setattr(loadgen, "SOURCE", edited)
    rebuilt, _ = loadgen.build()
    assert rebuilt is not None and rebuilt != first


@needs_cc
@pytest.mark.timeout(60)
def test_the_yardstick_command_prints_both_costs(tmp_path):
    """`python -m workloads.echo.loadgen --serve` runs both clients and prints their ratio."""
    done = subprocess.run(
        [sys.executable, "-m", "workloads.echo.loadgen", "--serve", "--connections", "10",
         "--duration", "0.3", "--rounds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "generator (every byte verified)" in done.stdout
    assert "minimal C ping-pong client" in done.stdout
    assert " x" in done.stdout.splitlines()[-1]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("generator", GENERATORS)
def test_over_tls_every_byte_comes_back_verified(generator, tmp_path):
    """``--tls`` against a stdlib TLS echo server with a self-signed certificate: the client
    does not verify it, handshakes before the window, and the record says TLS."""
    with served("tests.tls_echo") as (port, pid):
        args = ("--connections", "10", "--size", "1024", "--duration", "0.5", "--tls")
        record = load(port, tmp_path, *args, "--generator", generator, "--server-pid", str(pid))
    assert record["returncode"] == 0 and record["ok"], record["stdout"] + record["stderr"]
    assert record["generator"] == generator and record["tls"] is True
    assert record["requests"] > 10 and record["server_cpu_s"] > 0
    assert "tcp+tls" in record["stdout"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("generator", GENERATORS)
def test_over_tls_a_corrupt_echo_fails_the_run(generator, tmp_path):
    """A bit flipped by the server inside TLS is caught as corrupt, the others served."""
    with server("tests.tls_echo", "--flip-after", "5000") as port:
        args = ("--connections", "4", "--size", "1000", "--duration", "0.5", "--tls")
        record = load(port, tmp_path, *args, "--generator", generator)
    assert record["generator"] == generator
    assert record["returncode"] == 1 and record["corrupt"] == 1 and record["errors"] == 1, record
    assert record["requests"] >= 5


@pytest.mark.timeout(60)
def test_over_tls_a_plain_server_fails_the_handshake(tmp_path):
    """A server that does not speak TLS: every connection fails, and the record says why."""
    with server("workloads.echo.native", "selectors-floor", "--port", "0") as port:
        args = ("--connections", "2", "--size", "100", "--duration", "0.3", "--tls")
        record = load(port, tmp_path, *args)
    assert record["returncode"] == 1 and record["failed"] == 2, record
    assert "TLS" in record["first_error"] or "SSL" in record["first_error"], record
