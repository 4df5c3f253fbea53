"""The breaker on MongoDB (zq.storage.breakers): one document per queue, one per outcome.

A queue's breaker is one document of ``breakers``::

    {_id: {project, queue}, state, since, description, tripped_at, closed_at,
     redrive_due, window_from, next_probe, probe_claim, probe_expires,
     probe_successes}

and each outcome of its window one document of ``breaker_outcomes``::

    {project, queue, time, failed, message_id, description, recorded_at}

Every state change is ONE conditional ``find_one_and_update`` of the
breaker document whose filter names the state it was decided on (closed
for a trip, the probe's claim id for a probe's result, ``probe_claim:
null`` and a due ``next_probe`` for a probe's reservation): of two workers
deciding the same change at once exactly one makes it and writes its
``breaker`` event. ``window_from`` is set by the same update that closes
the breaker, so clearing the window is part of the close itself; outcomes
before it no longer count and the next write trims them.

The message a reject, delete or claim changes, the outcome documents and
the breaker document are separate documents: with transactions (a replica
set) the unit runs them in one transaction; without (a standalone server,
mongomock) they are written in that order, so a crash between them can
leave the message changed and its outcome unrecorded (one outcome
miscounted), never a message lost or delivered twice (docs/mongo.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from zq import events
from zq.events import event_fields
from zq.poison.breaker import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    BreakerPolicy,
    most_common,
    trips,
)
from zq.storage.breakers import BreakerLog, BreakerState, initial_state
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.documents import object_id

NOT_CLOSED = [OPEN, HALF_OPEN]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One failure or success as a step records it."""

    time: float  # when it happened (a lapse: its claim's expiry)
    failed: bool
    message_id: str | None = None  # failures: the message that failed
    description: str | None = None  # failures: zq.poison.breaker.stored_description
    claim_id: str | None = None  # the claim it was by (a probe's result when it is the probe)


def key(project: str, queue: str) -> dict[str, str]:
    """The breaker document's ``_id``."""
    return {"project": project, "queue": queue}


def read_doc(ctx: MongoContext, project: str, queue: str, *,
             session: Any = None) -> dict[str, Any] | None:
    """The queue's breaker document, None when it has none."""
    return ctx.breakers.find_one({"_id": key(project, queue)}, session=session)


def is_open(doc: dict[str, Any] | None) -> bool:
    """Whether failures are forgiven and deliveries held back (open or half-open)."""
    return doc is not None and doc["state"] != CLOSED


def outage_lapse(doc: dict[str, Any] | None, claim_expires: float) -> bool:
    """Whether a lapse is the outage's: open, and the claim expired since it tripped."""
    return is_open(doc) and claim_expires >= (doc or {}).get("tripped_at", 0.0)


def drop(ctx: MongoContext, project: str, queue: str, *, session: Any) -> None:
    """Forget the queue's breaker and outcomes (queue delete and purge)."""
    ctx.breakers.delete_one({"_id": key(project, queue)}, session=session)
    ctx.breaker_outcomes.delete_many({"project": project, "queue": queue}, session=session)


def record(ctx: MongoContext, project: str, queue: str, policy: BreakerPolicy,
           outcomes: list[Outcome], now: float, *, session: Any) -> list[dict[str, Any]]:
    """Record a step's outcomes and carry out what they change; the ``breaker`` events.

    A probe's result (an outcome by the probe's claim) moves an open or
    half-open breaker; a failure on a closed one may trip it.
    """
    if not outcomes:
        return []
    start = policy.window_start(now)
    kept = [o for o in outcomes if o.time >= start]
    if kept:
        at = datetime.now(UTC)
        ctx.breaker_outcomes.insert_many([
            {"project": project, "queue": queue, "time": o.time, "failed": o.failed,
             "message_id": o.message_id, "description": o.description, "recorded_at": at}
            for o in kept], ordered=True, session=session)
    doc = read_doc(ctx, project, queue, session=session)
    recorded: list[dict[str, Any]] = []
    if is_open(doc) and doc is not None and doc.get("probe_claim") is not None:
        for outcome in outcomes:
            if outcome.claim_id == doc["probe_claim"]:
                if outcome.failed:
                    recorded += _probe_failed(ctx, project, queue, policy, doc, now,
                                              session=session)
                    # A reject of the probe (after the message's own update):
                    # held back, so that the next probe is another message.
                    hold(ctx, project, queue, policy.probe_hold(now),
                         {"_id": object_id(outcome.message_id or "")}, session=session)
                else:
                    recorded += _probe_succeeded(ctx, project, queue, policy, doc, now,
                                                 session=session)
                break
    elif not is_open(doc) and any(o.failed for o in kept):
        recorded += _trip(ctx, project, queue, policy, doc, now, session=session)
    # Trim in the writing step; a close's window_from drops what came before it.
    ctx.breaker_outcomes.delete_many(
        {"project": project, "queue": queue, "time": {"$lt": _window_lower(doc, policy, now)}},
        session=session)
    return recorded


@dataclass(slots=True)
class Gate:
    """What an open breaker's gate decided for one claim."""

    reserved: dict[str, Any] | None = None  # the breaker document before this claim's probe
    recorded: list[dict[str, Any]] | None = None  # events of a lapsed probe it found
    lapsed_probe: str | None = None  # that probe's claim id: its message is to be held back


def probe_gate(ctx: MongoContext, project: str, queue: str, policy: BreakerPolicy,
               doc: dict[str, Any], claim_id: str, claim_expires: float, now: float, *,
               session: Any) -> Gate:
    """An open breaker's gate for one claim: the reservation when this claim may
    take the probe; a lapsed probe it found (the claim's step judges its
    lapse and holds its message back: policy.probe_hold)."""
    recorded: list[dict[str, Any]] = []
    probe = doc.get("probe_claim")
    if probe is not None:
        oid = object_id(probe)
        live = oid is not None and ctx.claims.find_one(
            {"_id": oid, "expires": {"$gt": now}}, {"_id": 1}, session=session) is not None
        if live:
            return Gate(recorded=[])  # one probe outstanding at a time, however long it takes
        if doc.get("probe_expires", 0.0) > now:
            # Released before its expiry: the probe ended with no outcome.
            ctx.breakers.update_one({"_id": doc["_id"], "probe_claim": probe},
                                    {"$set": {"probe_claim": None}}, session=session)
        else:
            # Its claim lapsed: a failed probe (the message's lapse itself is
            # counted by the walk that meets it).
            recorded += _probe_failed(ctx, project, queue, policy, doc, now, session=session)
            return Gate(recorded=recorded, lapsed_probe=probe)
    reserved = ctx.breakers.find_one_and_update(
        {"_id": doc["_id"], "state": {"$in": NOT_CLOSED}, "probe_claim": None,
         "next_probe": {"$lte": now}},
        {"$set": {"probe_claim": claim_id, "probe_expires": claim_expires,
                  "next_probe": now + policy.probe_interval}},
        session=session)
    return Gate(reserved=reserved, recorded=recorded)


def hold(ctx: MongoContext, project: str, queue: str, until: float,
         match: dict[str, Any], *, session: Any) -> None:
    """Hold back the message of a failed probe: not claimable before ``until``."""
    ctx.messages.update_many({"project": project, "queue": queue, **match},
                             {"$max": {"delay_until": until}}, session=session)


def unreserve(ctx: MongoContext, reserved: dict[str, Any], claim_id: str, *,
              session: Any) -> None:
    """Give back a probe reservation that delivered nothing (the queue had none free)."""
    ctx.breakers.update_one(
        {"_id": reserved["_id"], "probe_claim": claim_id},
        {"$set": {"probe_claim": None, "next_probe": reserved["next_probe"]}},
        session=session)


def _window_lower(doc: dict[str, Any] | None, policy: BreakerPolicy, now: float) -> float:
    """Outcomes at or after this count: the window, and nothing before the last close."""
    start = policy.window_start(now)
    if doc is None:
        return start
    return max(start, doc.get("window_from", start))


def _in_window(project: str, queue: str, lower: float, *, failed: bool) -> dict[str, Any]:
    return {"project": project, "queue": queue, "time": {"$gte": lower}, "failed": failed}


def _counts(ctx: MongoContext, project: str, queue: str, lower: float, *,
            session: Any) -> tuple[int, int]:
    """(failures, successes) of the window."""
    return (
        ctx.breaker_outcomes.count_documents(_in_window(project, queue, lower, failed=True),
                                             session=session),
        ctx.breaker_outcomes.count_documents(_in_window(project, queue, lower, failed=False),
                                             session=session),
    )


def _failures(ctx: MongoContext, project: str, queue: str, lower: float, *,
              session: Any) -> list[dict[str, Any]]:
    return list(ctx.breaker_outcomes.find(
        _in_window(project, queue, lower, failed=True),
        {"_id": 0, "time": 1, "message_id": 1, "description": 1}, session=session))


def window_description(ctx: MongoContext, project: str, queue: str, lower: float, *,
                       session: Any = None) -> str | None:
    """The most common failure description of the window (ties: the most recent)."""
    return most_common((f["time"], f.get("description"))
                       for f in _failures(ctx, project, queue, lower, session=session))


def _ensure(ctx: MongoContext, project: str, queue: str, *, session: Any) -> None:
    """Create the closed breaker document unless it exists."""
    try:
        ctx.breakers.update_one(
            {"_id": key(project, queue)},
            {"$setOnInsert": {"state": CLOSED, "since": 0.0, "description": None,
                              "tripped_at": None, "closed_at": None, "redrive_due": False,
                              "next_probe": 0.0, "probe_claim": None, "probe_expires": 0.0,
                              "probe_successes": 0}},
            upsert=True, session=session)
    except DuplicateKeyError:
        # Two first upserts raced outside a transaction: it exists, as wanted.
        if session is not None:
            raise


def _clear(ctx: MongoContext, project: str, queue: str, now: float, *, session: Any) -> None:
    """Drop the window's outcomes after a close.

    The close's own update already set ``window_from``, so nothing before
    it counts even if this delete never runs; the delete also drops the
    outcomes of the very instant of the close, which ``window_from`` keeps.
    """
    ctx.breaker_outcomes.delete_many({"project": project, "queue": queue,
                                      "time": {"$lte": now}}, session=session)


def _event(project: str, queue: str, now: float, state: str, previous: str,
           description: str | None, counts: tuple[int, int], *,
           forced: bool = False) -> dict[str, Any]:
    return event_fields(events.BREAKER, now, project, queue, detail=events.breaker_detail(
        state, previous, description, counts[0], counts[1], forced=forced))


def _opened(policy: BreakerPolicy, now: float, description: str | None) -> dict[str, Any]:
    return {"state": OPEN, "since": now, "tripped_at": now, "description": description,
            "next_probe": now + policy.probe_interval, "probe_claim": None,
            "probe_expires": 0.0, "probe_successes": 0}


def _closed(policy: BreakerPolicy, now: float) -> dict[str, Any]:
    return {"state": CLOSED, "since": now, "closed_at": now, "window_from": now,
            "redrive_due": policy.auto_redrive_max > 0, "probe_claim": None,
            "probe_expires": 0.0, "probe_successes": 0}


def _trip(ctx: MongoContext, project: str, queue: str, policy: BreakerPolicy,
          doc: dict[str, Any] | None, now: float, *, session: Any) -> list[dict[str, Any]]:
    lower = _window_lower(doc, policy, now)
    counts = _counts(ctx, project, queue, lower, session=session)
    # Distinct messages are at most the failures: a cheap test first.
    if not trips(policy, counts[0], counts[1], counts[0]):
        return []
    failures = _failures(ctx, project, queue, lower, session=session)
    if not trips(policy, counts[0], counts[1], len({f["message_id"] for f in failures})):
        return []
    description = most_common((f["time"], f.get("description")) for f in failures)
    if doc is None:
        _ensure(ctx, project, queue, session=session)
    won = ctx.breakers.find_one_and_update(
        {"_id": key(project, queue), "state": CLOSED},
        {"$set": _opened(policy, now, description)}, session=session)
    if won is None:
        return []  # another worker tripped it first and wrote the event
    return [_event(project, queue, now, OPEN, CLOSED, description, counts)]


def _probe_succeeded(ctx: MongoContext, project: str, queue: str, policy: BreakerPolicy,
                     doc: dict[str, Any], now: float, *, session: Any) -> list[dict[str, Any]]:
    successes = doc.get("probe_successes", 0) + 1
    counts = _counts(ctx, project, queue, _window_lower(doc, policy, now), session=session)
    if successes >= policy.close_after:
        change = _closed(policy, now)
    else:
        # Half-open: the next probe may go at once, still one at a time.
        change = {"state": HALF_OPEN, "probe_claim": None, "probe_successes": successes,
                  "next_probe": now}
        if doc["state"] != HALF_OPEN:
            change["since"] = now
    won = ctx.breakers.find_one_and_update(
        {"_id": doc["_id"], "state": doc["state"], "probe_claim": doc["probe_claim"]},
        {"$set": change}, session=session)
    if won is None or change["state"] == doc["state"]:
        return []
    if change["state"] == CLOSED:
        _clear(ctx, project, queue, now, session=session)
    return [_event(project, queue, now, change["state"], doc["state"], doc.get("description"),
                   counts)]


def _probe_failed(ctx: MongoContext, project: str, queue: str, policy: BreakerPolicy,
                  doc: dict[str, Any], now: float, *, session: Any) -> list[dict[str, Any]]:
    change: dict[str, Any] = {"state": OPEN, "probe_claim": None, "probe_successes": 0,
                              "next_probe": now + policy.probe_interval}
    if doc["state"] != OPEN:
        change["since"] = now
    won = ctx.breakers.find_one_and_update(
        {"_id": doc["_id"], "probe_claim": doc["probe_claim"]}, {"$set": change},
        session=session)
    if won is None or won["state"] == OPEN:
        return []
    counts = _counts(ctx, project, queue, _window_lower(doc, policy, now), session=session)
    return [_event(project, queue, now, OPEN, won["state"], won.get("description"), counts)]


def _state(doc: dict[str, Any] | None, description: str | None) -> BreakerState:
    if doc is None:
        return replace(initial_state(), description=description)
    return BreakerState(state=doc["state"], since=doc["since"], description=description,
                        tripped_at=doc.get("tripped_at"), closed_at=doc.get("closed_at"),
                        redrive_due=bool(doc.get("redrive_due")),
                        # Written when it opens, kept when it closes.
                        outage_description=doc.get("description"))


class MongoBreakers(BreakerLog):
    def __init__(self, ctx: MongoContext) -> None:
        self._ctx = ctx

    def read(self, project: str, queue: str, policy: BreakerPolicy, now: float) -> BreakerState:
        doc = read_doc(self._ctx, project, queue)
        if is_open(doc):
            return _state(doc, (doc or {}).get("description"))
        lower = _window_lower(doc, policy, now)
        return _state(doc, window_description(self._ctx, project, queue, lower))

    def force(self, project: str, queue: str, state: str, policy: BreakerPolicy,
              now: float) -> BreakerState:
        if state not in (OPEN, CLOSED):
            raise ValueError(f"a breaker is forced open or closed, not {state!r}")

        def change(session: Any) -> tuple[None, list[dict[str, Any]]]:
            doc = read_doc(self._ctx, project, queue, session=session)
            if is_open(doc) == (state == OPEN):
                return None, []  # already there (half-open counts as open)
            lower = _window_lower(doc, policy, now)
            counts = _counts(self._ctx, project, queue, lower, session=session)
            if state == OPEN:
                description = window_description(self._ctx, project, queue, lower,
                                                 session=session)
                where: dict[str, Any] = {"_id": key(project, queue), "state": CLOSED}
                update = _opened(policy, now, description)
                previous = CLOSED
                if doc is None:
                    _ensure(self._ctx, project, queue, session=session)
            else:
                assert doc is not None
                description = doc.get("description")
                where = {"_id": doc["_id"], "state": doc["state"]}
                update = _closed(policy, now)
                previous = doc["state"]
            won = self._ctx.breakers.find_one_and_update(
                where, {"$set": update}, return_document=ReturnDocument.AFTER, session=session)
            if won is None:
                return None, []  # another writer changed it first; read it again below
            if state == CLOSED:
                _clear(self._ctx, project, queue, now, session=session)
            return None, [_event(project, queue, now, state, previous, description, counts,
                                 forced=True)]

        self._ctx.units.run(change)
        return self.read(project, queue, policy, now)

    def redrive_done(self, project: str, queue: str, closed_at: float) -> None:
        self._ctx.breakers.update_one(
            {"_id": key(project, queue), "closed_at": closed_at, "redrive_due": True},
            {"$set": {"redrive_due": False}})

    def due_redrives(self) -> list[tuple[str, str]]:
        return [(doc["_id"]["project"], doc["_id"]["queue"])
                for doc in self._ctx.breakers.find({"redrive_due": True}, {"_id": 1})]
