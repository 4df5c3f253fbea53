"""The dead letter rule, in one place.

A queue whose metadata sets both ``_max_claim_count`` and
``_dead_letter_queue`` hands a message out at most ``_max_claim_count``
times; the next claim attempt moves it into the dead letter queue instead
of delivering it. The drivers perform the move atomically, but every
decision about it (when a message is exhausted, what ttl it gets, what its
history entry says, how history is shown) is made by the functions here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from zq.errors import DeadLetterConflict

MAX_CLAIM_COUNT = "_max_claim_count"
DEAD_LETTER_QUEUE = "_dead_letter_queue"
DEAD_LETTER_TTL = "_dead_letter_queue_messages_ttl"

REASON_MAX_CLAIM_COUNT = "max_claim_count"

# Following a chain longer than this means the metadata is corrupt (a cycle
# written before validation existed, or by a race); refuse rather than loop.
MAX_CHAIN_LENGTH = 64


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    """Where and when a queue's exhausted messages go."""

    max_claim_count: int
    queue: str
    ttl: int | None = None  # None: a moved message keeps its own ttl
    reason: str = REASON_MAX_CLAIM_COUNT

    def is_exhausted(self, claim_count: int) -> bool:
        """Whether a message with this many claims must not be delivered again."""
        return claim_count >= self.max_claim_count

    def moved(self, message_ttl: int, now: float) -> MovedValues:
        """The ttl, created and expires a message gets when moved at ``now``."""
        ttl = self.ttl if self.ttl is not None else message_ttl
        return MovedValues(ttl=ttl, created=now, expires=now + ttl)

    def history_entry(self, source_queue: str, now: float) -> dict[str, Any]:
        """The raw history entry a move appends to the message."""
        return {"queue": source_queue, "reason": self.reason, "time": now}


@dataclass(frozen=True, slots=True)
class MovedValues:
    ttl: int
    created: float
    expires: float


def policy_from_metadata(metadata: Mapping[str, Any]) -> DeadLetterPolicy | None:
    """The queue's policy, or None when the mechanism is not switched on."""
    max_count = metadata.get(MAX_CLAIM_COUNT)
    target = metadata.get(DEAD_LETTER_QUEUE)
    if max_count is None or not target:
        return None
    return DeadLetterPolicy(
        max_claim_count=int(max_count),
        queue=str(target),
        ttl=metadata.get(DEAD_LETTER_TTL),
    )


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


def check_chain(
    source: str,
    target: str,
    next_in_chain: Callable[[str], str | None],
) -> None:
    """Refuse a dead letter queue that is the source or leads back to it.

    ``next_in_chain(q)`` gives queue q's own dead letter queue (or None).
    Raises DeadLetterConflict naming the cycle.
    """
    if target == source:
        raise DeadLetterConflict(
            f"Queue {source!r} cannot be its own dead letter queue."
        )
    path = [source, target]
    current: str | None = target
    for _ in range(MAX_CHAIN_LENGTH):
        current = next_in_chain(current)
        if current is None:
            return
        path.append(current)
        if current == source:
            raise DeadLetterConflict(
                "Dead letter queues would form a cycle: " + " -> ".join(path) + "."
            )
        if current in path[1:-1]:
            # An existing cycle further down, not involving source: the move
            # chain never returns to source, but it never ends either.
            raise DeadLetterConflict(
                "The dead letter chain already contains a cycle: "
                + " -> ".join(path) + "."
            )
    raise DeadLetterConflict(
        f"The dead letter chain from {source!r} is longer than {MAX_CHAIN_LENGTH} queues."
    )
