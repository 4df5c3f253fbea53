"""The dead letter rule, in one place.

A queue whose metadata sets both ``_max_claim_count`` and
``_dead_letter_queue`` hands a message out at most ``_max_claim_count``
times; the next claim attempt moves it into the dead letter queue instead
of delivering it. With ``_dead_letter_expired: true`` a message whose ttl
runs out moves there too (reason ``expired``) instead of being deleted.
The drivers perform the moves atomically; when a message is exhausted is
decided here, what a moved message looks like in zq.poison.moves. How history is
shown to clients is zq.poison.history's job; refusing dead letter cycles is
zq.poison.dead_letter_chain's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zq.poison import moves

MAX_CLAIM_COUNT = "_max_claim_count"
DEAD_LETTER_QUEUE = "_dead_letter_queue"
DEAD_LETTER_TTL = "_dead_letter_queue_messages_ttl"
DEAD_LETTER_EXPIRED = "_dead_letter_expired"


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    """Where a queue's exhausted (and, with ``expired``, expired) messages go."""

    max_claim_count: int | None  # None: delivered without limit
    queue: str
    ttl: int | None = None  # None: a moved message keeps its own ttl
    expired: bool = False  # _dead_letter_expired: expired messages move too

    def is_exhausted(self, claim_count: int, forgiven_count: int = 0) -> bool:
        """Whether a message with this many claims must not be delivered again.

        Deliveries forgiven to the message (``forgiven_count``: failures
        during an open breaker, lapses charged to a consumer; always 0 with
        neither feature on, which is Zaqar's rule) do not count. The Redis
        scripts make the same comparison (``claim_count - forgiven_count >=
        max_claim_count``, lua/_lib.lua ``take_batch``): pinned by
        tests/contract/test_moves.py and tests/contract/test_breaker.py.
        """
        return (self.max_claim_count is not None
                and claim_count - forgiven_count >= self.max_claim_count)

    @property
    def move(self) -> moves.Move:
        """What an exhausted message's move looks like."""
        return moves.dead_lettered(self.queue, self.ttl)

    @property
    def expiry_move(self) -> moves.Move | None:
        """What an expired message's move looks like; None: expired messages are deleted."""
        return moves.expired(self.queue, self.ttl) if self.expired else None


def policy_from_metadata(metadata: Mapping[str, Any]) -> DeadLetterPolicy | None:
    """The queue's policy, or None when the mechanism is not switched on.

    It is on with a ``_dead_letter_queue`` and ``_max_claim_count``,
    ``_dead_letter_expired: true`` or both (zq.metadata refuses either
    without a dead letter queue).
    """
    max_count = metadata.get(MAX_CLAIM_COUNT)
    target = metadata.get(DEAD_LETTER_QUEUE)
    expired = metadata.get(DEAD_LETTER_EXPIRED) is True
    if not target or (max_count is None and not expired):
        return None
    return DeadLetterPolicy(
        max_claim_count=None if max_count is None else int(max_count),
        queue=str(target),
        ttl=metadata.get(DEAD_LETTER_TTL),
        expired=expired,
    )


def expiry_move_from_metadata(metadata: Mapping[str, Any]) -> moves.Move | None:
    """The move of the queue's expired messages (``_dead_letter_expired``), or None.

    Drivers read it from the stored metadata when they collect expired
    messages (gc), where no caller passes a policy down.
    """
    policy = policy_from_metadata(metadata)
    return None if policy is None else policy.expiry_move
