"""The delivery walk shared by claims and pop, and the dead letter move.

A delivery walks free candidates in queue order. A candidate that lapsed
is judged first (zq.storage.mongo.lapses: forgiven or charged). Each
exhausted candidate (``DeadLetterPolicy.is_exhausted``, forgiven
deliveries left out) is moved to the dead letter queue by
zq.storage.mongo.moves with the policy's move; every other one is handed to ``deliver``, a
conditional single-document write that succeeds only while the message is
still free, so two concurrent deliveries never hand out one message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.mongo.breakers import Outcome
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.documents import free
from zq.storage.mongo.lapses import LapseChange
from zq.storage.mongo.moves import move_document, move_expired, moved_event
from zq.storage.mongo.queues import ensure_queue

# Expired messages a claim or pop moves at most (``_dead_letter_expired``),
# so that its own work stays bounded; gc moves the rest.
EXPIRED_PER_DELIVERY = 100

# deliver(candidate, lapse) -> the message as delivered (claimed or popped),
# or None when another writer got to it first. ``lapse`` is the change a
# lapse of the candidate makes (zq.storage.mongo.lapses), written by the
# same update. The same roles as SQL's take_deliverable and Lua's
# take_batch(..., deliver).
Deliver = Callable[[dict[str, Any], LapseChange | None], dict[str, Any] | None]
# The lapse of a candidate, or None (zq.storage.mongo.lapses.discover).
Discover = Callable[[dict[str, Any]], LapseChange | None]


@dataclass
class Walked:
    """What a delivery walk did: delivered messages, move events, breaker failures."""

    delivered: list[dict[str, Any]] = field(default_factory=list)
    moved: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)


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
    discover: Discover | None = None,
) -> Walked:
    """Deliver up to ``limit`` messages; the delivered, the dead letter events, the lapses."""
    walked = Walked()
    expiry = None if dead_letter is None else dead_letter.expiry_move
    if expiry is not None:
        walked.moved += move_expired(backend, project, queue, expiry, now,
                                     limit=EXPIRED_PER_DELIVERY, session=session)
    after: int | None = None  # walk forward only: the walk always ends
    dead_letter_queue_ready = False
    while len(walked.delivered) < limit:
        query = {"project": project, "queue": queue, **free(now)}
        if after is not None:
            query["marker"] = {"$gt": after}
        candidates = list(backend.messages.find(
            query, sort=[("marker", 1)], limit=limit - len(walked.delivered), session=session
        ))
        if not candidates:
            break
        for candidate in candidates:
            after = candidate["marker"]
            lapse = None if discover is None else discover(candidate)
            forgiven = candidate.get("forgiven_count", 0) + (0 if lapse is None
                                                             else lapse.forgiven)
            if dead_letter is not None and dead_letter.is_exhausted(candidate["claim_count"],
                                                                    forgiven):
                if not dead_letter_queue_ready:
                    ensure_queue(backend, project, dead_letter.queue, session=session)
                    dead_letter_queue_ready = True
                move = dead_letter.move if lapse is None else lapse.exhausting_move(dead_letter)
                if move_document(backend, candidate, move, now, state=free(now),
                                 session=session, lapse=lapse):
                    walked.moved.append(moved_event(candidate, move, now, claim_id=None,
                                                    client_id=client_id))
                    _lapse_counted(walked, lapse)
                continue
            taken = deliver(candidate, lapse)
            if taken is not None:
                walked.delivered.append(taken)
                _lapse_counted(walked, lapse)
                if len(walked.delivered) == limit:
                    break
    return walked


def _lapse_counted(walked: Walked, lapse: LapseChange | None) -> None:
    """The lapse was consumed by the update that won: its failure counts."""
    if lapse is not None and lapse.outcome is not None:
        walked.outcomes.append(lapse.outcome)


def lapse_filter(lapse: LapseChange | None) -> dict[str, Any]:
    """The filter part that makes a delivery consume exactly this lapse."""
    return {} if lapse is None else {"claim_id": lapse.claim_id}


def merged(update: dict[str, Any], lapse: LapseChange | None) -> dict[str, Any]:
    """``update`` plus the lapse's fields (they never name the same field)."""
    if lapse is None:
        return update
    out = {op: dict(fields) for op, fields in update.items()}
    for op, fields in lapse.update().items():
        out.setdefault(op, {}).update(fields)
    return out
