"""The dead letter rule, in one place.

A queue whose metadata sets both ``_max_claim_count`` and
``_dead_letter_queue`` hands a message out at most ``_max_claim_count``
times; the next claim attempt moves it into the dead letter queue instead
of delivering it. The drivers perform the move atomically, but every
decision about it (when a message is exhausted, what ttl it gets, what its
history entry says) is made here. How history is shown to clients is
zq.history's job; refusing dead letter cycles is zq.dead_letter_chain's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_CLAIM_COUNT = "_max_claim_count"
DEAD_LETTER_QUEUE = "_dead_letter_queue"
DEAD_LETTER_TTL = "_dead_letter_queue_messages_ttl"

REASON_MAX_CLAIM_COUNT = "max_claim_count"


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
