"""How a message's dead letter history is shown: compacted, times as ISO 8601.

Drivers store one raw entry per move (zq.poison.moves.Move.history_entry); the
API shows them compacted here, and the analytics use the same time format.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from zq.poison import moves


def compact_history(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Raw move entries -> one entry per (queue, reason), most recent first.

    Like RabbitMQ's x-death header: ``count`` moves, ``first_time`` and
    ``last_time`` as ISO 8601 UTC; ``description`` (a reject's text) is the
    one of the most recent of those moves that had one, absent when none had.
    Lapse entries (zq.poison.blame, reason ``lapsed`` with ``charged_to``)
    are compacted apart from moves, per (queue, charged_to), and show
    ``charged_to`` and the ``client_id`` of the most recent one.
    """
    merged: dict[tuple[str, str, str | None], dict[str, Any]] = {}
    for entry in entries:
        charged = entry.get(moves.CHARGED_TO)
        key = (entry[moves.QUEUE], entry[moves.REASON], charged)
        time = float(entry[moves.TIME])
        described = entry.get(moves.DESCRIPTION)
        seen = merged.get(key)
        if seen is None:
            seen = merged[key] = {"queue": key[0], "reason": key[1], "count": 0,
                                  "first": time, "last": time, "described": None,
                                  "charged_to": charged, "client": None}
        seen["count"] += 1
        if charged is not None and time >= seen["last"]:
            seen["client"] = entry.get(moves.CLIENT_ID)
        seen["first"] = min(seen["first"], time)
        seen["last"] = max(seen["last"], time)
        if described is not None and (seen["described"] is None
                                      or time >= seen["described"][0]):
            seen["described"] = (time, described)
    ordered = sorted(merged.values(), key=lambda e: e["last"], reverse=True)
    return [_shown(e) for e in ordered]


def _shown(merged: dict[str, Any]) -> dict[str, Any]:
    shown = {
        "queue": merged["queue"],
        "reason": merged["reason"],
        "count": merged["count"],
        "first_time": iso8601(merged["first"]),
        "last_time": iso8601(merged["last"]),
    }
    if merged["described"] is not None:
        shown["description"] = merged["described"][1]
    if merged["charged_to"] is not None:
        shown["charged_to"] = merged["charged_to"]
        shown["client_id"] = merged["client"]
    return shown


def iso8601(timestamp: float) -> str:
    """POSIX seconds -> ``2026-11-22T15:17:40Z``."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
