"""Rejects other than a retry, and the unreadable messages a claim or pop sets aside.

A terminal reject is the move primitive with zq.poison.moves.rejected, one
step inside the queue's backend: the pool rule (checked when
``_dead_letter_queue`` was written) keeps the dead letter queue on the
queue's pool, as for a claim's move.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from zq import metadata as meta
from zq.errors import (
    ClaimMismatch,
    Conflict,
    EncryptionFailure,
    MessageIsClaimed,
    MessageNotFound,
)
from zq.poison import moves
from zq.service.opening import Unreadable
from zq.storage.base import Storage
from zq.storage.delivery_rules import NO_RULES, DeliveryRules
from zq.storage.records import ClaimRecord


def refuse_without_claim(storage: Storage, project: str, queue: str, message_id: str,
                         claim_id: str | None) -> NoReturn:
    """A reject without the id of a live claim: MessageIsClaimed or ClaimMismatch."""
    held = storage.messages.get(project, queue, message_id).claim_id is not None
    if not claim_id and held:
        raise MessageIsClaimed(
            f"Message {message_id!r} is claimed; give its claim id to reject it.")
    raise ClaimMismatch(
        "Only the holder of the live claim on a message may reject it: "
        "give that claim's id as claim_id.")


def move_to_dead_letter_queue(storage: Storage, project: str, queue: str, message_id: str,
                              description: str | None, stored: dict[str, Any], *,
                              claim_id: str, client_id: str | None,
                              rules: DeliveryRules = NO_RULES) -> None:
    """Move the message to the dead letter queue ``stored`` (the queue's metadata) names.

    ``rules.breaker``: a failure, held as a retry while the breaker is open.
    """
    target = stored.get(meta.DEAD_LETTER_QUEUE)
    if not target:
        raise Conflict(
            f"Queue {queue!r} has no {meta.DEAD_LETTER_QUEUE}: a terminal reject has "
            "nowhere to move the message, and it stays where it is. Set "
            f"{meta.DEAD_LETTER_QUEUE}, or give retry_after to reject for a retry.")
    move = moves.rejected(target, stored.get(meta.DEAD_LETTER_TTL), description)
    moved = storage.messages.move(project, queue, [message_id], move,
                                  claim_id=claim_id, client_id=client_id, rules=rules)
    if not moved:
        raise MessageNotFound.gone(message_id)


def set_aside(storage: Storage, project: str, queue: str, unreadable: Sequence[Unreadable],
              stored: dict[str, Any], *, claim: ClaimRecord | None) -> None:
    """Take unreadable messages a claim (or a pop, ``claim`` None) took out of the way.

    With a ``_dead_letter_queue``: moved there now, reason ``unreadable``
    and the failure as description (zq.poison.moves.unreadable); a redrive
    brings them back once the key is restored. Without one, a claimed
    message leaves the claim and is claimable again after the claim's
    ttl (a retry reject): its claim count is its own, it is not held by
    a claim its holder never saw, and it does not come back first in
    every claim. A pop without a dead letter queue is refused
    (EncryptionFailure): popping would delete it, and it is next.
    """
    target = stored.get(meta.DEAD_LETTER_QUEUE)
    if not target and claim is None:
        raise EncryptionFailure(unreadable[0].reason)
    for message in unreadable:
        try:
            if target:
                move = moves.unreadable(target, stored.get(meta.DEAD_LETTER_TTL),
                                        message.reason)
                storage.messages.move(project, queue, [message.id], move,
                                      claim_id=claim.id if claim else None, client_id=None)
            elif claim is not None:
                storage.messages.reject(project, queue, message.id, claim_id=claim.id,
                                        client_id=None, description=message.reason,
                                        retry_after=claim.ttl)
        except (ClaimMismatch, MessageNotFound):
            continue  # it left the claim meanwhile (expired, deleted): nothing to do
