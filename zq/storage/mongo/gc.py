"""Garbage collection of expired messages and claims.

Each batch is one unit (a transaction where the server has them) of
conditional deletes: of two collectors running at once only one removes a
given message or claim, and only that one records its ``expired`` event.
"""

from __future__ import annotations

from typing import Any

from zq import events
from zq.events import event_fields
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.moves import expiry_moves, move_expired_documents
from zq.storage.records import Collected

BATCH = 500


def collect(b: MongoContext) -> Collected:
    """Remove expired messages and claims; says how many of each went."""
    messages = moved = 0
    while True:
        found, removed, went = b.units.run(lambda session: _messages_batch(b, session))
        messages += removed
        moved += went
        if found < BATCH:
            break
    claims = 0
    while True:
        found, removed = b.units.run(lambda session: _claims_batch(b, session))
        claims += removed
        if found < BATCH:
            return Collected(messages, claims, moved)


def _messages_batch(
    b: MongoContext, session: Any
) -> tuple[tuple[int, int, int], list[dict[str, Any]]]:
    """(messages looked at, removed, moved) and their events.

    Those of queues with ``_dead_letter_expired`` move to their dead letter
    queue instead of being removed.
    """
    now = b.clock.now()
    expired = {"expires": {"$lte": now}}
    found = list(b.messages.find(
        expired, {"_id": 1, "project": 1, "queue": 1}, limit=BATCH, session=session))
    moving = expiry_moves(b, {(doc["project"], doc["queue"]) for doc in found},
                          session=session)
    recorded = []
    for doc in found:
        if (doc["project"], doc["queue"]) in moving:
            continue
        # Conditional delete: of two collectors only one removes the
        # message, and only that one records its event.
        gone = b.messages.find_one_and_delete(
            {"_id": doc["_id"], **expired}, session=session
        )
        if gone is not None:
            recorded.append(event_fields(
                events.EXPIRED, now, gone["project"], gone["queue"],
                message_id=str(gone["_id"]), claim_count=gone["claim_count"],
            ))
    removed = len(recorded)
    for (project, queue), move in moving.items():
        docs = list(b.messages.find(
            {"_id": {"$in": [d["_id"] for d in found
                             if (d["project"], d["queue"]) == (project, queue)]},
             **expired},
            sort=[("marker", 1)], session=session,
        ))
        recorded += move_expired_documents(b, docs, move, now, session=session)
    return (len(found), removed, len(recorded) - removed), recorded


def _claims_batch(
    b: MongoContext, session: Any
) -> tuple[tuple[int, int], list[dict[str, Any]]]:
    """(claims looked at, claims removed by this collector) and their events."""
    now = b.clock.now()
    expired = {"expires": {"$lte": now}}
    found = list(b.claims.find(expired, {"_id": 1}, limit=BATCH, session=session))
    recorded = []
    removed = 0
    for doc in found:
        claim = b.claims.find_one_and_delete({"_id": doc["_id"], **expired}, session=session)
        if claim is None:
            continue
        removed += 1
        claim_id = str(claim["_id"])
        # Messages it held until it expired and that nothing took since.
        still_held = b.messages.count_documents(
            {"claim_id": claim_id, "expires": {"$gt": now}}, session=session
        )
        if still_held:
            recorded.append(event_fields(
                events.EXPIRED, now, claim["project"], claim["queue"],
                claim_id=claim_id, client_id=claim.get("client_id"),
                detail=events.claim_expired_detail(still_held),
            ))
    return (len(found), removed), recorded
