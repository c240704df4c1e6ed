"""Work per echo request, counted: every row ranked by the instructions its server executes per
request (``python -m bench instructions``), beside its syscalls and its server CPU.

Instructions are exact for the run counted and no other process's work is in them; CPU time sees
everything (the kernel's work, caches, the neighbours). How many requests share a turn still
depends on timing; the second-count column shows how far that moves a row.
Rendered from ``reports/results/instructions.json``, the anatomy and the quick run's echo store
alone.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from bench import headline, registry
from bench.fingerprint import fingerprint
from bench.plan import USER_BASE, YARDSTICK, Row
from bench.store import ResultStore, load_file, results_path
from bench.studies.anatomy import FILES as ANATOMY_FILES
from bench.studies.instructions import FILE
from bench.summary import valid_values
from machine import environment
from machine.environment import by_machine

TITLE = "Work per request, counted"
AGREE = 0.01  # two counts of a row closer than this share agree


def load_instructions(results: Path) -> dict | None:
    """The stored instruction counts; None where none are stored."""
    return load_file(results, FILE)


def _cpu_at_fixed_load(results: Path) -> tuple[dict[str, float], dict]:
    """Row key -> median server CPU µs per request at the declared fixed load (quick run),
    and the environment of the newest session those figures come from."""
    store = ResultStore.load(results_path(results, "quick", "echo"), "echo", "quick")
    for point in store.data["points"].values():
        params = point["params"]
        if all(params.get(k) == v for k, v in headline.HEADLINE_PACED):
            found = {
                key: statistics.median(values)
                for key, entry in point["rows"].items()
                if (values := valid_values(entry["reps"], "server_cpu_us"))
            }
            newest = max((point["rows"][key]["session"] for key in found), default=None)
            return found, store.sessions[newest]["environment"] if newest else {}
    return {}, {}


def _syscalls(results: Path) -> tuple[dict[str, float], dict]:
    """Row key -> syscalls per request at the anatomy's fixed load, and where it counted."""
    data = load_file(results, ANATOMY_FILES[False]) or {}  # the fixed load's anatomy
    found = {key: row["syscalls"]["total"] for key, row in data.get("rows", {}).items()}
    return found, data.get("environment", {})


def _machines(counted: dict, anatomy: dict, quick: dict) -> str:
    """Which machine each column comes from, where they are not all one."""
    where = by_machine(
        [("the instructions", counted), ("the syscalls", anatomy), ("the server CPU", quick)]
    )
    if len(where) < 2:
        return ""
    return (
        " Measured on two machines: "
        + "; ".join(f"{' and '.join(columns)} on {machine}" for machine, columns in where.items())
        + ": read each column down, not one machine's figure against another's."
    )


def _row(key: str) -> Row:
    variant, style = key.split("/")
    return Row(variant, style, anchor=style == "native")


def changed(key: str, code: str | None) -> bool:
    """An echo row's figure taken on code that has changed since, or whose code the figure
    did not record (the instruction counts and the cost anatomy mark such rows ‡)."""
    return code != fingerprint(registry.get("echo"), _row(key))


def stale(key: str, entry: dict) -> bool:
    """Counted on code that has changed since (or whose code the count did not record)."""
    return changed(key, entry["closed"].get("code"))


def second_counts(
    ranked: list[tuple[str, dict]], regime: str = "closed"
) -> list[tuple[str, float]]:
    """(row, relative change) for each count in `regime` that replaced an earlier count of the
    same code: how far a second count moved."""
    return [
        (key, e[regime]["per_request"] / e[regime]["before"]["per_request"] - 1)
        for key, e in ranked
        if "before" in e.get(regime, {})
    ]


def agreement(ranked: list[tuple[str, dict]], rate: int) -> str:
    """One sentence: how the rows counted twice agreed, in each regime, or that none has been."""
    said = []
    for regime, where in (("closed", "in the closed loop"), ("paced", f"at {rate:,} requests/s")):
        moved = second_counts(ranked, regime)
        if moved:
            within = sum(abs(change) < AGREE for _, change in moved)
            key, largest = max(moved, key=lambda item: abs(item[1]))
            said.append(
                f"{within} of {len(moved)} rows agree within {AGREE:.0%} {where} (the largest "
                f"change: {label(key)}, {largest:+.1%})"
            )
    if not said:
        return (
            "No row has been counted twice on the same code yet (`python -m bench "
            "instructions` again, in another session, shows how far a second count moves)."
        )
    return (
        "Counted twice on the same code, in two sessions: "
        + "; ".join(said)
        + " (the *second count* column)."
    )


def label(key: str) -> str:
    return key.removesuffix("/native").replace("/", " · ")


def ranking(results: Path) -> list[tuple[str, dict]]:
    """The counted rows, least work first (closed loop), each with its stored entry."""
    data = load_instructions(results) or {}
    counted = [
        (key, entry)
        for key, entry in data.get("rows", {}).items()
        if "per_request" in entry.get("closed", {})
    ]
    return sorted(counted, key=lambda item: item[1]["closed"]["per_request"])


def section(results: Path) -> list[str]:
    data = load_instructions(results)
    ranked = ranking(results)
    if not data or not ranked:
        return []
    (cpu, quick_env), (syscalls, anatomy_env) = _cpu_at_fixed_load(results), _syscalls(results)
    base = next((e["closed"]["per_request"] for k, e in ranked if k.startswith(USER_BASE)), None)
    rate = data["rates"]["paced"]
    lines = [
        f"## {TITLE}",
        "",
        f"Every echo row at {data['point']['size'] // 1024} KiB × {data['point']['connections']} "
        "connections, ranked by the instructions its server executes per request in the closed "
        f"loop (in brackets, the rank at {rate:,} requests/s, the regime nearer the "
        "server CPU column's fixed load), counted under callgrind by `python -m bench "
        "instructions` over the load window alone (every connection open and primed, no accept "
        "and no close in it). *Instructions* are exact for the run counted and hold no other "
        "process's work, but see no kernel work and no cache miss, and how many requests share "
        "a turn still depends on timing (the *second count* column shows how far that moves a "
        "row); *server CPU* sees everything, the neighbours included, and moves with them. "
        "Closed loop: each connection sends again as soon as its echo is back; at "
        f"{rate:,} requests/s a turn serves one request or a few (the bench's "
        f"{headline.HEADLINE_RATE:,} is more than a server under callgrind keeps up with). "
        "Syscalls: the cost anatomy's, at the bench's fixed load; server CPU: the quick run's, "
        f"at its fixed load (its newest session: {str(quick_env.get('date', 'none yet'))[:10]})."
        + _machines(data.get("environment", {}), anatomy_env, quick_env)
        + " "
        + agreement(ranked, rate)
        + (
            " ‡ counted on code that has changed since: `python -m bench instructions "
            "--loop NAME` counts it again."
            if any(stale(key, entry) for key, entry in ranked)
            else ""
        ),
        "",
        f"| # (at {rate:,}/s) | row | instructions / request, closed loop "
        f"| second count, closed / at {rate:,}/s | × {USER_BASE} "
        f"| at {rate:,} requests/s | syscalls / request | server CPU µs / request |",
        "|---|---|---|---|---|---|---|---|",
    ]
    paced_rank = ranks(ranked, "paced")
    moved = {regime: dict(second_counts(ranked, regime)) for regime in ("closed", "paced")}
    for number, (key, entry) in enumerate(ranked, 1):
        closed = entry["closed"]["per_request"]
        name = label(key)
        shown = f"**{name}**" if name in (USER_BASE, YARDSTICK) else name
        cells = [
            f"{number} ({paced_rank.get(key, '—')})",
            shown + ("‡" if stale(key, entry) else ""),
            f"{closed:,.0f}",
            " / ".join(_number(moved[r].get(key), "{:+.1%}") for r in ("closed", "paced")),
            _number(base and closed / base, "×{:.2f}"),
            _number(entry.get("paced", {}).get("per_request"), "{:,.0f}"),
            _number(syscalls.get(key), "{:.2f}"),
            _number(cpu.get(key), "{:.1f}"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, "", *counted_in(data, ranked), ""]


def ranks(ranked: list[tuple[str, dict]], regime: str) -> dict[str, int]:
    """Each row's rank by its count in one regime, least work first (rows not counted there
    have none)."""
    counted = [
        (k, e[regime]["per_request"]) for k, e in ranked if "per_request" in e.get(regime, {})
    ]
    return {key: n for n, (key, _) in enumerate(sorted(counted, key=lambda kv: kv[1]), 1)}


def counted_in(data: dict, ranked: list[tuple[str, dict]]) -> list[str]:
    """Where and on what code the counts were taken: the dates, the machine, the commits (a
    "-dirty" one was counted with uncommitted changes)."""
    counts = [e[r] for _, e in ranked for r in ("closed", "paced") if r in e]
    dates = sorted({c["date"][:10] for c in counts})
    commits = sorted({c.get("commit") or "?" for c in counts})
    dirty = sum(c.endswith("-dirty") for c in commits)
    env = data.get("environment")
    where = (
        f"on {env.get('host', '?')} ({environment.describe(env)}), "
        f"{env.get('python_implementation', 'CPython')} {env.get('python', '?')}"
        if env
        else "machine not recorded"
    )
    return [
        f"*Counted in:* {' to '.join(dict.fromkeys([dates[0], dates[-1]]))} {where}, commit"
        f"{'s' if len(commits) > 1 else ''} {', '.join(f'`{c}`' for c in commits)}"
        + (f" ({dirty} with uncommitted changes)" if dirty else "")
        + "; the syscalls and the server CPU are their own studies', said where they ran.",
    ]


def _number(value: float | None, form: str) -> str:
    return "—" if value is None else form.format(value)
