"""The http workload: uvicorn on each loop that speaks asyncio, loaded by wrk, end to end.

The loops are found by discovery (a variant with ``asyncio_loop``); a variant that gains one
joins these tests by itself. Runs are short (1 s): what is checked is that every response was
right and the record complete, never a speed.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys

import pytest

import loops
from workloads.http import wrk
from workloads.http.__main__ import judge
from workloads.http.app import BODIES, app

pytest.importorskip("uvicorn", reason="uvicorn is not installed (dependency group 'http')")
ASYNCIO_LOOPS = [n for n, v in loops.discover().items() if v.asyncio_loop is not None]
NEEDS_WRK = pytest.mark.skipif(
    shutil.which("wrk") is None, reason="wrk is not installed (apt-get install -y wrk)"
)
RECORD_FIELDS = {
    "requests_per_s",
    "latency_us_p50",
    "latency_us_p90",
    "latency_us_p99",
    "server_cpu_us_per_request",
    "failures",
    "valid",
    "invalid_reason",
}


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workloads.http", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_asyncio_loops_come_from_discovery():
    assert {"asyncio", "callbacks"} <= set(ASYNCIO_LOOPS)
    assert ("uvloop" in ASYNCIO_LOOPS) == loops.discover()["uvloop"].available
    assert "traps" not in ASYNCIO_LOOPS


@NEEDS_WRK
@pytest.mark.parametrize("name", ASYNCIO_LOOPS)
def test_a_short_run_is_valid_and_complete(name, tmp_path):
    out = tmp_path / "http.json"
    args = ["--loop", name, "--seconds", "1", "--connections", "10", "--warmup", "0"]
    done = cli(*args, "--json", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(out.read_text())
    assert record["valid"] and record["failures"] == 0 and record["body_error"] == ""
    assert record["requests"] > 0 and record.keys() >= RECORD_FIELDS
    assert record["loop"] == name and record["server_alive"]


@NEEDS_WRK
@pytest.mark.skipif(sys.version_info < (3, 12), reason="asyncio.eager_task_factory is 3.12+")
def test_asyncio_eager_serves_with_eager_tasks(tmp_path):
    assert "asyncio_eager" in ASYNCIO_LOOPS
    done = cli("--loop", "asyncio_eager", "--seconds", "1", "--path", "/json", "--warmup", "0")
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_unknown_loop_is_a_usage_error():
    done = cli("--loop", "nope")
    assert done.returncode == 2 and "unknown loop 'nope'" in done.stderr


def test_a_loop_without_asyncio_is_a_usage_error_naming_those_with_it():
    done = cli("--loop", "traps")
    assert done.returncode == 2
    assert "does not speak asyncio" in done.stderr and "callbacks" in done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--connections", "0"], "must be positive, got 0"),
        (["--seconds", "-1"], "argument --seconds: -1 is outside"),
        (["--connections", "2", "--threads", "3"], "--threads must not exceed --connections"),
        (["--path", "/nope"], "invalid choice: '/nope'"),
    ],
)
def test_bad_arguments_are_usage_errors(args, says):
    done = cli("--loop", "callbacks", *args)
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr


def test_any_failure_makes_the_run_invalid():
    base = {"body_error": "", "server_alive": True}
    result = {
        "requests": 100,
        "duration_us": 1_000_000,
        **{f"errors_{kind}": 0 for kind in wrk.ERROR_KINDS},
        "latency_us_p50": 1,
    }
    assert judge(dict(base), dict(result), 0.01, 0.01)["valid"]
    bad = judge(dict(base), result | {"errors_status": 3}, 0.01, 0.01)
    assert not bad["valid"] and bad["failures"] == 3 and "status 3" in bad["invalid_reason"]
    dead = judge(base | {"server_alive": False}, dict(result), 0.01, 0.01)
    assert not dead["valid"] and "died" in dead["invalid_reason"]


def test_wrk_output_without_a_summary_is_an_error():
    with pytest.raises(ValueError, match="no summary"):
        wrk.parse("Running 1s test @ http://127.0.0.1:1/\n")


def test_the_app_answers_each_path_and_404():
    async def get(path: str) -> list[dict]:
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        await app({"type": "http", "path": path, "method": "GET"}, receive, send)
        return sent

    for path, body in BODIES.items():
        start, reply = asyncio.run(get(path))
        assert start["status"] == 200 and reply["body"] == body
    assert asyncio.run(get("/nope"))[0]["status"] == 404


@NEEDS_WRK
def test_uvicorn_takes_the_callbacks_loop_by_import_string():
    """The README's command: uvicorn --loop loops.callbacks.dropin:new_event_loop ..."""
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--loop",
            "loops.callbacks.dropin:new_event_loop",
            "--port",
            "0",
            "--log-level",
            "info",
            "workloads.http.app:app",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in server.stderr:
            if "Uvicorn running on" in line:
                port = int(line.split("http://")[1].split(":")[1].split()[0])
                break
        else:
            pytest.fail("uvicorn never said it was running")
        result, _ = wrk.run(wrk.command(f"http://127.0.0.1:{port}/json", 1, 4, 1, 5), None)
        assert result["requests"] > 0
        assert sum(result[f"errors_{kind}"] for kind in wrk.ERROR_KINDS) == 0
    finally:
        server.terminate()
        server.wait(10)
        server.stderr.close()
