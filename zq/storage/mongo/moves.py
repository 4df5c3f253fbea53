"""The move of one message to another queue: ONE single-document update.

Used by the delivery walk (an exhausted message) and ``MongoMessages.move``.
The filter requires the message to be still in its source queue, in the
state the decision was made on (``state``) and with the claim count it
was made on; the update rewrites its queue, ttl, times, counts and claim
fields and appends its history entry together, so after it the message is
in exactly one queue whatever crashes when. Every value comes from the
zq.poison.moves.Move.
"""

from __future__ import annotations

from typing import Any

import orjson

from zq.events import event_fields
from zq.poison.dead_letter import expiry_move_from_metadata
from zq.poison.moves import Move
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.documents import expiry_date
from zq.storage.mongo.queues import ensure_queue


def move_document(
    backend: MongoContext,
    message: dict[str, Any],
    move: Move,
    now: float,
    *,
    state: dict[str, Any],
    session: Any,
) -> bool:
    """Move ``message`` as ``move`` says while it still matches ``state``.

    Returns False (nothing changed) when another writer changed it first.
    The destination queue must exist already (ensure_queue).
    """
    values = move.values(message["ttl"], now)
    update: dict[str, Any] = {
        "$set": {
            "queue": move.to,
            "ttl": values.ttl,
            "created": values.created,
            "expires": values.expires,
            "expires_at": expiry_date(values.expires, now),
            "claim_id": None,
            "claim_expires": 0.0,
            "delay_until": 0.0,
            **({"claim_count": 0} if move.reset_claim_count else {}),
        },
        "$push": {"history": move.history_entry(message["queue"], now)},
    }
    if move.count_redrive:
        update["$inc"] = {"redrive_count": 1}
    result = backend.messages.update_one(
        {
            "_id": message["_id"],
            "project": message["project"],
            "queue": message["queue"],
            "claim_count": message["claim_count"],
            **state,
        },
        update,
        session=session,
    )
    return result.modified_count == 1


def moved_event(
    message: dict[str, Any],
    move: Move,
    now: float,
    *,
    claim_id: str | None,
    client_id: str | None,
) -> dict[str, Any]:
    """The event of one moved message (its claim count before the move)."""
    return event_fields(
        move.event,
        now,
        message["project"],
        message["queue"],
        message_id=str(message["_id"]),
        claim_id=claim_id,
        client_id=client_id,
        claim_count=message["claim_count"],
        detail=move.event_detail(message["fingerprint"], message["body"]),
    )


def expiry_moves(
    backend: MongoContext, pairs: set[tuple[str, str]], *, session: Any
) -> dict[tuple[str, str], Move]:
    """The (project, queue) pairs whose expired messages move, with their move.

    Read from each queue's stored metadata with zq.poison.dead_letter's rule (gc,
    which no caller hands a policy).
    """
    found = {}
    for project, name in pairs:
        doc = backend.queues.find_one({"project": project, "name": name},
                                      {"metadata": 1}, session=session)
        move = None if doc is None else expiry_move_from_metadata(
            orjson.loads(doc["metadata"]))
        if move is not None:
            found[(project, name)] = move
    return found


def move_expired_documents(
    backend: MongoContext,
    docs: list[dict[str, Any]],
    move: Move,
    now: float,
    *,
    session: Any,
) -> list[dict[str, Any]]:
    """Move the expired ``docs`` of one queue as ``move`` says; the events of those moved.

    Each move is conditional on the message being still expired where it
    was: of two collectors only one moves it, and only that one records it.
    """
    if not docs:
        return []
    ensure_queue(backend, docs[0]["project"], move.to, session=session)
    expired = {"expires": {"$lte": now}}
    return [
        moved_event(doc, move, now, claim_id=None, client_id=None)
        for doc in docs
        if move_document(backend, doc, move, now, state=expired, session=session)
    ]


def move_expired(
    backend: MongoContext,
    project: str,
    queue: str,
    move: Move,
    now: float,
    *,
    limit: int,
    session: Any,
) -> list[dict[str, Any]]:
    """Move up to ``limit`` expired messages of the queue (a claim on it); their events."""
    docs = list(backend.messages.find(
        {"project": project, "queue": queue, "expires": {"$lte": now}},
        sort=[("marker", 1)], limit=limit, session=session,
    ))
    return move_expired_documents(backend, docs, move, now, session=session)
