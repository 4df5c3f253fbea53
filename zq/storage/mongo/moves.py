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

from enum import Enum
from typing import TYPE_CHECKING, Any, Final

import orjson

from zq.events import event_fields
from zq.poison.dead_letter import expiry_move_from_metadata
from zq.poison.moves import Move
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.documents import expiry_date
from zq.storage.mongo.queues import ensure_queue

if TYPE_CHECKING:
    from zq.storage.mongo.lapses import LapseChange


class Unset(Enum):
    """``last_failure`` not given: the move keeps the message's."""

    TOKEN = 0


UNSET: Final = Unset.TOKEN


def move_document(
    backend: MongoContext,
    message: dict[str, Any],
    move: Move,
    now: float,
    *,
    state: dict[str, Any],
    session: Any,
    lapse: LapseChange | None = None,
    last_failure: str | Unset | None = UNSET,
) -> bool:
    """Move ``message`` as ``move`` says while it still matches ``state``.

    Returns False (nothing changed) when another writer changed it first.
    The destination queue must exist already (ensure_queue). ``lapse``: the
    lapse a walk found on it, written by the same update (its lapse entry
    before the move's); ``last_failure``: a terminal reject's description
    (zq.poison.breaker.stored_description), set by the same update.
    """
    values = move.values(message["ttl"], now)
    entry = move.history_entry(message["queue"], now)
    lapse_set = {} if lapse is None else dict(lapse.set)
    history = lapse_set.pop("history", None)
    update: dict[str, Any] = {
        "$set": {
            **lapse_set,
            "queue": move.to,
            "ttl": values.ttl,
            "created": values.created,
            "expires": values.expires,
            "expires_at": expiry_date(values.expires, now),
            "claim_id": None,
            "claim_expires": 0.0,
            "delay_until": 0.0,
            # claim_count, forgiven_count and lapsed_with start over together.
            **({"claim_count": 0, "forgiven_count": 0, "lapsed_with": []}
               if move.reset_claim_count else {}),
        },
    }
    if not isinstance(last_failure, Unset):
        update["$set"]["last_failure"] = last_failure
    if history is not None:
        update["$set"]["history"] = [*history, entry]
    else:
        update["$push"] = {"history": entry}
    increments = {}
    if move.count_redrive:
        increments["redrive_count"] = 1
    if lapse is not None and lapse.forgiven and not move.reset_claim_count:
        increments["forgiven_count"] = lapse.forgiven
    if increments:
        update["$inc"] = increments
    result = backend.messages.update_one(
        {
            "_id": message["_id"],
            "project": message["project"],
            "queue": message["queue"],
            "claim_count": message["claim_count"],
            **state,
            **({} if lapse is None else {"claim_id": lapse.claim_id}),
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
