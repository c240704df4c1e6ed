"""Results as data: one JSON file per study and mode, reused where it still holds.

``reports/results/<mode>/<study>.json`` holds, per point, per row, every repetition's raw
record (not a summary: medians are computed when rendering), the session that measured it and
the fingerprint of the code it depends on. Each session (one ``bench run``) stores its
environment, and keeps a copy of the asyncio rows it measured as that session's baseline, so
a row's ratio is always to asyncio measured in the same session, even after later sessions
re-measured asyncio.

Reuse: a stored row is skipped by a later run when it was measured on the same machine (host,
CPU, Python, library versions) and its code fingerprint (:mod:`bench.fingerprint`) is
unchanged. A point's time cap shapes one result, "did not finish": such a row, stopped under
another cap than the point's, is measured again. A file from another machine is not mixed with
this one's: the run starts it afresh (the old one stays in git history).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from bench.plan import BASELINE, Point, Row
from bench.summary import complete
from machine.environment import ROOT, describe, machine_key
from machine.interpreters import REFERENCE

FORMAT = 1
RESULTS = ROOT / "reports" / "results"  # where a run stores and a report reads, by default


def results_dir(results: Path, mode: str, python: str = REFERENCE) -> Path:
    """The folder of one interpreter's stored results in one mode: the reference interpreter's
    in ``<mode>/``, another's beside them in ``<mode>/python-3.13/``, so no table mixes two."""
    return results / mode if python == REFERENCE else results / mode / f"python-{python}"


def results_path(results: Path, mode: str, workload: str, python: str = REFERENCE) -> Path:
    """The file holding one study's results in one mode (quick or full) on one interpreter
    (by default the reference interpreter's, the report's main tables)."""
    return results_dir(results, mode, python) / f"{workload}.json"


@dataclass
class StoredRow:
    """A row's stored repetitions and where they come from."""

    row: Row
    session: str
    code: str
    reps: list[dict]


class ResultStore:
    """The stored results of one study in one mode (quick or full)."""

    def __init__(self, path: Path, data: dict, kept: frozenset[str] = frozenset()) -> None:
        self.path = path
        self.data = data
        # The rows each session keeps a copy of (the study's baselines and controls), so a
        # later session re-measuring them leaves each earlier session its own denominator.
        self.kept = kept

    @classmethod
    def empty(
        cls, path: Path, workload: str, mode: str, kept: frozenset[str] = frozenset()
    ) -> ResultStore:
        data = {"format": FORMAT, "workload": workload, "mode": mode, "sessions": {}, "points": {}}
        return cls(path, data, kept)

    @classmethod
    def load(
        cls, path: Path, workload: str, mode: str, kept: frozenset[str] = frozenset()
    ) -> ResultStore:
        """The stored results at path, or an empty store if there are none."""
        if not path.exists():
            return cls.empty(path, workload, mode, kept)
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise StoreError(f"{path} is not readable results JSON: {error}") from error
        if data.get("format") != FORMAT or data.get("workload") != workload:
            raise StoreError(
                f"{path} holds format {data.get('format')!r} results of "
                f"{data.get('workload')!r}; expected format {FORMAT} of {workload!r}"
            )
        data["points"] = split_by_rate(data["points"])
        return cls(path, data, kept)

    # -- sessions --------------------------------------------------------------------------

    @property
    def sessions(self) -> dict[str, dict]:
        return self.data["sessions"]

    def machines(self) -> list[str]:
        """The machines its sessions ran on, as machine.environment.describe names them, in
        the order first stored (a session that recorded no environment names none)."""
        envs = (session.get("environment") for session in self.sessions.values())
        return list(dict.fromkeys(describe(env) for env in envs if env))

    def on_machine(self, machine: str, unknown: bool = False) -> ResultStore | None:
        """The part of this store measured on one machine (as :meth:`machines` names it): its
        sessions there and the rows and baselines they measured; with `unknown`, those of
        sessions that recorded no machine too. None where no row is left."""

        def here(session: str) -> bool:
            env = self.sessions.get(session, {}).get("environment")
            return describe(env) == machine if env else unknown

        points = {}
        for key, point in self.data["points"].items():
            rows = {name: row for name, row in point["rows"].items() if here(row["session"])}
            if rows:
                baselines = point.get("baselines", {})
                points[key] = {
                    **point,
                    "rows": rows,
                    "baselines": {s: kept for s, kept in baselines.items() if here(s)},
                }
        if not points:
            return None
        sessions = {name: session for name, session in self.sessions.items() if here(name)}
        return ResultStore(
            self.path, {**self.data, "points": points, "sessions": sessions}, self.kept
        )

    def machine_matches(self, env: dict) -> bool:
        """True if every stored session ran on the machine described by env.

        Same host, CPU, cores and Python, and the same version of every library both records
        name (a library the lab stopped listing, or started to, is no reason to start over).
        """
        return all(same_machine(session["environment"], env) for session in self.sessions.values())

    def add_session(self, session: str, env: dict, argv: list[str]) -> None:
        self.sessions[session] = {"environment": env, "argv": argv}

    def end_session(self, session: str, load_average: list[float] | None) -> None:
        """Record the machine's load at the end of a session, then save."""
        if session in self.sessions:
            self.sessions[session]["load_average_end"] = load_average
            self.save()

    # -- rows ------------------------------------------------------------------------------

    def _point(self, point: Point) -> dict:
        return self.data["points"].setdefault(
            point.key, {"params": point.args, "rows": {}, "baselines": {}}
        )

    def stored(self, point: Point, row: Row) -> StoredRow | None:
        entry = self.data["points"].get(point.key, {}).get("rows", {}).get(row.key)
        if entry is None:
            return None
        return StoredRow(row, entry["session"], entry["code"], entry["reps"])

    def needs(self, point: Point, row: Row, code: str, headline: str | None = None) -> bool:
        """True if the row has no complete, current result stored at this point.

        A row that failed (or overran its cap) is complete: it stops at its first failed
        repetition, and is measured again when its code changes (or with --redo). With the
        point's headline figure, a row may be complete before its maximum repetitions (see
        :func:`bench.summary.complete`).
        """
        reps = self.resumable(point, row, code)
        minimum = point.min_repetitions if headline else None
        return reps is None or not complete(reps, point.rounds(row), minimum, headline or "")

    def resumable(self, point: Point, row: Row, code: str) -> list[dict] | None:
        """The stored repetitions a run may continue from (None: start this row afresh).

        Repetitions are saved one by one, so an interrupted run continues a row where it
        stopped, provided they were measured on the same code. A row that did not finish under
        a time cap other than the point's now starts afresh: the cap shapes that result.
        """
        stored = self.stored(point, row)
        if stored is None or stored.code != code or stored.session not in self.sessions:
            return None
        if any(rep.get("point_cap_s", point.cap_s) != point.cap_s for rep in stored.reps):
            return None  # it did not finish under another cap: under this one, it may
        return stored.reps

    def put(self, point: Point, row: Row, session: str, code: str, reps: list[dict]) -> None:
        entry = self._point(point)
        entry["rows"][row.key] = {
            "variant": row.variant,
            "style": row.style,
            "anchor": row.anchor,
            "kind": row.kind,
            "session": session,
            "code": code,
            "reps": reps,
        }
        if (row.variant == BASELINE and not row.anchor) or row.key in self.kept:
            entry["baselines"].setdefault(session, {})[row.key] = reps

    def save(self) -> None:
        """Write atomically, so an interrupted run leaves the previous file whole."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        used = {
            entry["session"]
            for point in self.data["points"].values()
            for entry in point["rows"].values()
        }
        for point in self.data["points"].values():
            point["baselines"] = {s: b for s, b in point["baselines"].items() if s in used}
        self.data["sessions"] = {s: v for s, v in self.sessions.items() if s in used}
        temporary = self.path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(self.data, indent=1, sort_keys=False) + "\n")
        os.replace(temporary, self.path)


# A point stored before its offered rate was a parameter (echo chose it from the slowest row,
# per session) is split by the rate its repetitions record, each part marked with this.
DERIVED_RATE = "rate_derived"


def split_by_rate(points: dict[str, dict]) -> dict[str, dict]:
    """Stored points with a repetition's offered rate made part of its point.

    A point whose parameters name no ``rate`` but whose repetitions record one (echo's fixed
    load before the rate was declared) becomes one point per rate, its parameters given that
    ``rate`` and ``rate_derived``: no median pools two rates, and the report shows each as the
    old point it is. Rows and baselines keep only the repetitions at their part's rate.
    """
    out: dict[str, dict] = {}
    for key, point in points.items():
        rates = {
            rep.get("rate")
            for entry in point["rows"].values()
            for rep in entry["reps"]
            if isinstance(rep.get("rate"), int | float)
        }
        if "rate" in point["params"] or not rates:
            out[key] = point
            continue
        for rate in sorted(rates):
            rows = {}
            for row_key, entry in point["rows"].items():
                reps = [rep for rep in entry["reps"] if rep.get("rate") == rate]
                if reps:
                    rows[row_key] = entry | {"reps": reps}
            baselines = {
                session: kept
                for session, by_row in point.get("baselines", {}).items()
                if (
                    kept := {
                        row_key: [rep for rep in reps if rep.get("rate") == rate]
                        for row_key, reps in by_row.items()
                        if any(rep.get("rate") == rate for rep in reps)
                    }
                )
            }
            params = point["params"] | {"rate": rate, DERIVED_RATE: True}
            out[f"{key},rate={rate:g},{DERIVED_RATE}"] = {
                "params": params,
                "rows": rows,
                "baselines": baselines,
            }
    return out


class StoreError(RuntimeError):
    """Stored results that cannot be used as they are."""


def same_machine(one: dict, other: dict) -> bool:
    if machine_key(one) != machine_key(other):
        return False
    first, second = one.get("libraries") or {}, other.get("libraries") or {}
    return all(first[name] == second[name] for name in first.keys() & second.keys())


# -- what the report and the anatomy read ---------------------------------------------------


def load_mode(
    results: Path, mode: str, workloads: list[str], python: str = REFERENCE
) -> dict[str, ResultStore | None]:
    """Each study's stored results in one mode on one interpreter (None: nothing stored)."""
    stores: dict[str, ResultStore | None] = {}
    for name in workloads:
        path = results_path(results, mode, name, python)
        stores[name] = ResultStore.load(path, name, mode) if path.exists() else None
    return stores


def per_machine(
    stores: dict[str, ResultStore | None],
) -> list[tuple[str | None, dict[str, ResultStore | None]]]:
    """The stores split by the machine their sessions ran on, the machine holding the most rows
    first: a page each, so that no page sets two machines' figures side by side (a row whose
    session names no machine stays with the first). One machine, or none named: as they are."""
    named = {machine for kept in stores.values() if kept for machine in kept.machines()}
    if len(named) < 2:
        return [(next(iter(named), None), stores)]

    def rows(part: dict[str, ResultStore | None]) -> int:
        return sum(
            len(p["rows"]) for kept in part.values() if kept for p in kept.data["points"].values()
        )

    parts = {
        machine: {name: kept.on_machine(machine) if kept else None for name, kept in stores.items()}
        for machine in named
    }
    order = sorted(parts, key=lambda machine: (-rows(parts[machine]), machine))
    first = order[0]
    parts[first] = {
        name: kept.on_machine(first, unknown=True) if kept else None
        for name, kept in stores.items()
    }
    return [(machine, parts[machine]) for machine in order]


def stored_points(results: Path, mode: str, workload: str) -> dict[str, dict]:
    """One study's stored points by key ({} where nothing is stored)."""
    path = results_path(results, mode, workload)
    return ResultStore.load(path, workload, mode).data["points"] if path.exists() else {}


def load_file(results: Path, name: str) -> dict | None:
    """A side study's stored file under the results folder (its declaration names it); None
    where it is not stored."""
    path = results / name
    return json.loads(path.read_text()) if path.exists() else None


def save_file(results: Path, name: str, data: dict) -> None:
    """A side study's file written whole, keys sorted, so that a diff shows what moved."""
    path = results / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
