"""The delivery walk shared by claims and pop, and the dead letter move.

A delivery walks free candidates in queue order. Each exhausted candidate
(``DeadLetterPolicy.is_exhausted``) is moved to the dead letter queue by
``move_to_dead_letter_queue``; every other one is handed to ``deliver``, a
conditional single-document write that succeeds only while the message is
still free, so two concurrent deliveries never hand out one message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zq import events
from zq.dead_letter import DeadLetterPolicy
from zq.events import event_fields
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.documents import expiry_date, free
from zq.storage.mongo.queues import ensure_queue

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
                if move_to_dead_letter_queue(backend, candidate, dead_letter, now, session):
                    moved.append(dead_lettered_event(candidate, dead_letter, now, client_id))
                continue
            taken = deliver(candidate)
            if taken is not None:
                delivered.append(taken)
                if len(delivered) == limit:
                    break
    return delivered, moved


def move_to_dead_letter_queue(
    backend: MongoContext,
    message: dict[str, Any],
    policy: DeadLetterPolicy,
    now: float,
    session: Any,
) -> bool:
    """Move one message to ``policy.queue``: ONE single-document update.

    The filter requires the message to be still free in its source queue
    with the claim count the decision was made on; the update rewrites its
    queue, ttl, times and claim fields and appends its history entry
    together, so after it the message is in exactly one queue whatever
    crashes when. Returns False when another writer changed it first.
    """
    values = policy.moved(message["ttl"], now)
    result = backend.messages.update_one(
        {
            "_id": message["_id"],
            "project": message["project"],
            "queue": message["queue"],
            "claim_count": message["claim_count"],
            **free(now),
        },
        {
            "$set": {
                "queue": policy.queue,
                "ttl": values.ttl,
                "created": values.created,
                "expires": values.expires,
                "expires_at": expiry_date(values.expires, now),
                "claim_id": None,
                "claim_expires": 0.0,
                "delay_until": 0.0,
            },
            "$push": {"history": policy.history_entry(message["queue"], now)},
        },
        session=session,
    )
    return result.modified_count == 1


def dead_lettered_event(
    message: dict[str, Any], policy: DeadLetterPolicy, now: float, client_id: str | None
) -> dict[str, Any]:
    return event_fields(
        events.DEAD_LETTERED,
        now,
        message["project"],
        message["queue"],
        message_id=str(message["_id"]),
        client_id=client_id,
        claim_count=message["claim_count"],
        detail=events.dead_lettered_detail(policy.queue, policy.reason,
                                          message["fingerprint"], message["body"]),
    )
