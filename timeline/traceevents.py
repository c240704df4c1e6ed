"""A record as trace-event JSON: the format Chrome's tracing view and Perfetto open.

Each slice becomes a complete event (``"ph": "X"``) on the thread of its row, in microseconds
as the format wants; each row is named by a metadata event, so the viewer shows the same rows
as the lab's charts (viztracer and trio's instruments write the same format). Open a file in
https://ui.perfetto.dev or chrome://tracing (both load it from disk; nothing is uploaded).
"""

from __future__ import annotations

from typing import Any

PID = 1  # one process: the traced run


def trace_events(record: dict[str, Any]) -> dict[str, Any]:
    """The trace-event document of one record (JSON-ready)."""
    events: list[dict[str, Any]] = [
        {
            "ph": "M",
            "pid": PID,
            "name": "process_name",
            "args": {"name": f"{record['loop']} · {record['style']} · {record['scenario']}"},
        }
    ]
    for row in record["rows"]:
        events.append(
            {
                "ph": "M",
                "pid": PID,
                "tid": row["id"],
                "name": "thread_name",
                "args": {"name": f"{row['name']} ({row['kind']})"},
            }
        )
        events.append(
            {
                "ph": "M",
                "pid": PID,
                "tid": row["id"],
                "name": "thread_sort_index",
                "args": {"sort_index": row["id"]},
            }
        )
    kinds = {row["id"]: row["kind"] for row in record["rows"]}
    names = {row["id"]: row["name"] for row in record["rows"]}
    for piece in record["slices"]:
        events.append(
            {
                "ph": "X",
                "pid": PID,
                "tid": piece["row"],
                "name": names[piece["row"]],
                "cat": kinds[piece["row"]],
                "ts": round(piece["start"] * 1e6, 3),
                "dur": round((piece["end"] - piece["start"]) * 1e6, 3),
                "args": {k: v for k, v in piece.items() if k not in ("row", "start", "end") and v},
            }
        )
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            key: str(record.get(key, ""))
            for key in ("loop", "style", "scenario", "python", "commit", "cpu")
        },
    }
