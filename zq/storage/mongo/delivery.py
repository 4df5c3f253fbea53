"""The delivery walk shared by claims and pop, and the dead letter move.

A delivery walks free candidates in queue order. Each exhausted candidate
(``DeadLetterPolicy.is_exhausted``) is moved to the dead letter queue by
zq.storage.mongo.moves with the policy's move; every other one is handed to ``deliver``, a
conditional single-document write that succeeds only while the message is
still free, so two concurrent deliveries never hand out one message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.documents import free
from zq.storage.mongo.moves import move_document, move_expired, moved_event
from zq.storage.mongo.queues import ensure_queue

# Expired messages a claim or pop moves at most (``_dead_letter_expired``),
# so that its own work stays bounded; gc moves the rest.
EXPIRED_PER_DELIVERY = 100

# deliver(candidate) -> the message as delivered (claimed or popped), or
# None when another writer got to it first. The same roles as SQL's
# take_deliverable and Lua's take_batch(..., deliver).
Deliver = Callable[[dict[str, Any]], dict[str, Any] | None]


def take_batch(
    backend: MongoContext,
    project: str,
    queue: str,
    *,
    limit: int,
    now: float,
    client_id: str | None,
    dead_letter: DeadLetterPolicy | None,
    deliver: Deliver,
    session: Any,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Deliver up to ``limit`` messages; returns them and the dead letter events."""
    delivered: list[dict[str, Any]] = []
    moved: list[dict[str, Any]] = []
    expiry = None if dead_letter is None else dead_letter.expiry_move
    if expiry is not None:
        moved += move_expired(backend, project, queue, expiry, now,
                              limit=EXPIRED_PER_DELIVERY, session=session)
    after: int | None = None  # walk forward only: the walk always ends
    dead_letter_queue_ready = False
    while len(delivered) < limit:
        query = {"project": project, "queue": queue, **free(now)}
        if after is not None:
            query["marker"] = {"$gt": after}
        candidates = list(backend.messages.find(
            query, sort=[("marker", 1)], limit=limit - len(delivered), session=session
        ))
        if not candidates:
            break
        for candidate in candidates:
            after = candidate["marker"]
            if dead_letter is not None and dead_letter.is_exhausted(candidate["claim_count"]):
                if not dead_letter_queue_ready:
                    ensure_queue(backend, project, dead_letter.queue, session=session)
                    dead_letter_queue_ready = True
                if move_document(backend, candidate, dead_letter.move, now, state=free(now),
                                 session=session):
                    moved.append(moved_event(candidate, dead_letter.move, now, claim_id=None,
                                             client_id=client_id))
                continue
            taken = deliver(candidate)
            if taken is not None:
                delivered.append(taken)
                if len(delivered) == limit:
                    break
    return delivered, moved
