"""How a message's dead letter history is shown: compacted, times as ISO 8601.

Drivers store one raw entry per move (zq.dead_letter.DeadLetterPolicy.
history_entry); the API shows them compacted here, and the analytics use
the same time format.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any


def compact_history(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Raw move entries -> one entry per (queue, reason), most recent first.

    Like RabbitMQ's x-death header: ``count`` moves, ``first_time`` and
    ``last_time`` as ISO 8601 UTC.
    """
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in entries:
        key = (entry["queue"], entry["reason"])
        time = float(entry["time"])
        seen = merged.get(key)
        if seen is None:
            merged[key] = {"queue": key[0], "reason": key[1], "count": 1,
                           "first": time, "last": time}
        else:
            seen["count"] += 1
            seen["first"] = min(seen["first"], time)
            seen["last"] = max(seen["last"], time)
    ordered = sorted(merged.values(), key=lambda e: e["last"], reverse=True)
    return [
        {
            "queue": e["queue"],
            "reason": e["reason"],
            "count": e["count"],
            "first_time": iso8601(e["first"]),
            "last_time": iso8601(e["last"]),
        }
        for e in ordered
    ]


def iso8601(timestamp: float) -> str:
    """POSIX seconds -> ``2026-11-22T15:17:40Z``."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
