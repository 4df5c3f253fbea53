"""Messages: post, read, delete and pop."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

from bson import ObjectId

from zq import events
from zq.errors import MessageNotFound
from zq.events import event_fields
from zq.poison.backoff import release_delay
from zq.poison.breaker import stored_description
from zq.poison.moves import Move
from zq.storage.base import MessageController
from zq.storage.checks import check_delete, check_move
from zq.storage.delivery_rules import NO_RULES, DeliveryRules
from zq.storage.mongo import breakers, lapses
from zq.storage.mongo.breakers import Outcome
from zq.storage.mongo.consumers import write_settle
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.counters import markers_key, reserve
from zq.storage.mongo.delivery import lapse_filter, take_batch
from zq.storage.mongo.documents import (
    alive,
    expiry_date,
    free,
    held_by,
    object_id,
    to_record,
)
from zq.storage.mongo.lapses import LapseChange
from zq.storage.mongo.moves import UNSET, move_document, moved_event
from zq.storage.mongo.queues import ensure_queue
from zq.storage.records import MessageRecord, NewMessage


class Failure(Enum):
    """How a reject's failure is taken (``rules.breaker``)."""

    UNRECORDED = "unrecorded"  # no breaker on the queue: Zaqar's behaviour
    CHARGED = "charged"  # closed: counted toward _max_claim_count
    FORGIVEN = "forgiven"  # open or half-open: forgiven_count + 1, terminal rejects held


class MongoMessages(MessageController):
    def __init__(self, ctx: MongoContext) -> None:
        self._ctx = ctx

    def new_id(self) -> str:
        return str(ObjectId())

    def post(
        self,
        project: str,
        queue: str,
        messages: Sequence[NewMessage],
        *,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,  # nothing in them applies to a post here
    ) -> list[str]:
        if not messages:
            return []
        # Markers are reserved outside the unit: a retried transaction or a
        # failed insert only leaves a gap, and the hot counter document stays
        # out of the transaction's write set.
        last = reserve(self._ctx.counters, markers_key(project), len(messages))
        first = last - len(messages) + 1

        def change(session: Any) -> tuple[list[str], list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            ensure_queue(self._ctx, project, queue, session=session)
            docs = [
                _new_document(project, queue, message, first + i, client_id, now)
                for i, message in enumerate(messages)
            ]
            self._ctx.messages.insert_many(docs, ordered=True, session=session)
            recorded = [
                event_fields(
                    events.POSTED, now, project, queue,
                    message_id=str(doc["_id"]), client_id=client_id, claim_count=0,
                    detail=events.posted_detail(message.ttl, message.delay,
                                               message.fingerprint, message.body,
                                               with_body=message.event_body),
                )
                for doc, message in zip(docs, messages, strict=True)
            ]
            return [str(doc["_id"]) for doc in docs], recorded

        return self._ctx.units.run(change)

    def list(
        self,
        project: str,
        queue: str,
        *,
        marker: int | None = None,
        limit: int = 10,
        echo: bool = False,
        client_id: str | None = None,
        include_claimed: bool = False,
        include_delayed: bool = False,
    ) -> list[MessageRecord]:
        now = self._ctx.clock.now()
        query: dict[str, Any] = {"project": project, "queue": queue, **alive(now)}
        if marker is not None:
            query["marker"] = {"$gt": marker}
        if not echo and client_id is not None:
            query["client_id"] = {"$ne": client_id}
        if not include_claimed:
            query["claim_expires"] = {"$lte": now}
        if not include_delayed:
            # A held message's delay_until is its backoff after the claim: it
            # is claimed, not delayed.
            query["$or"] = [{"claim_expires": {"$gt": now}}, {"delay_until": {"$lte": now}}]
        docs = self._ctx.messages.find(query, sort=[("marker", 1)], limit=limit)
        return [to_record(doc, now) for doc in docs]

    def get(self, project: str, queue: str, message_id: str) -> MessageRecord:
        now = self._ctx.clock.now()
        oid = object_id(message_id)
        doc = None if oid is None else self._ctx.messages.find_one(
            {"_id": oid, "project": project, "queue": queue, **alive(now)}
        )
        if doc is None:
            raise MessageNotFound.gone(message_id)
        return to_record(doc, now)

    def get_many(
        self, project: str, queue: str, message_ids: Sequence[str]
    ) -> list[MessageRecord]:
        ids = _object_ids(message_ids)
        if not ids:
            return []
        now = self._ctx.clock.now()
        docs = self._ctx.messages.find(
            {"_id": {"$in": ids}, "project": project, "queue": queue, **alive(now)},
            sort=[("marker", 1)],
        )
        return [to_record(doc, now) for doc in docs]

    def delete(
        self,
        project: str,
        queue: str,
        message_id: str,
        *,
        claim_id: str | None,
        client_id: str | None,
        settle_claim: bool = False,
        rules: DeliveryRules = NO_RULES,
    ) -> None:
        oid = object_id(message_id)
        if oid is None:
            return

        def change(session: Any) -> tuple[None, list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            if settle_claim and claim_id is not None:
                # The consumer log's settle, in the delete's unit.
                write_settle(self._ctx.database["consumers"], project, queue, claim_id,
                             now=now, ended=False, session=session)
            where = {"_id": oid, "project": project, "queue": queue, **alive(now)}
            doc = self._ctx.messages.find_one(where, session=session)
            if doc is None:
                return None, []
            held = doc["claim_expires"] > now
            check_delete(message_id, claim_id, doc["claim_id"] if held else None)
            # Delete only in the state just checked: if a claim took or left
            # the message meanwhile, nothing is deleted and no event recorded.
            state = ({"claim_id": claim_id, "claim_expires": {"$gt": now}} if held
                     else {"claim_expires": {"$lte": now}})
            deleted = self._ctx.messages.delete_one({**where, **state}, session=session)
            if deleted.deleted_count == 0:
                return None, []
            recorded = [_deleted_event(doc, now, client_id)]
            if held and rules.breaker is not None:
                # A delete by the claim's holder: a success, after the delete.
                recorded += breakers.record(
                    self._ctx, project, queue, rules.breaker,
                    [Outcome(time=now, failed=False, claim_id=claim_id)], now, session=session)
            return None, recorded

        self._ctx.units.run(change)

    def delete_many(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        *,
        claim_ids: Sequence[str] | None = None,
        client_id: str | None,
        settle_claims: bool = False,
        rules: DeliveryRules = NO_RULES,
    ) -> list[str]:
        ids = _object_ids(message_ids)

        def change(session: Any) -> tuple[list[str], list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            for claim_id in (claim_ids or []) if settle_claims else []:
                # The consumer log's settles, in the delete's unit.
                write_settle(self._ctx.database["consumers"], project, queue, claim_id,
                             now=now, ended=False, session=session)
            deleted: list[str] = []
            recorded: list[dict[str, Any]] = []
            successes: list[Outcome] = []
            for oid in ids:
                query = {"_id": oid, "project": project, "queue": queue, **alive(now)}
                if claim_ids is not None:
                    query["claim_id"] = {"$in": list(claim_ids)}
                    query["claim_expires"] = {"$gt": now}
                doc = self._ctx.messages.find_one_and_delete(query, session=session)
                if doc is not None:
                    deleted.append(str(oid))
                    recorded.append(_deleted_event(doc, now, client_id))
                    if claim_ids is not None:
                        successes.append(Outcome(time=now, failed=False,
                                                 claim_id=doc["claim_id"]))
            if rules.breaker is not None:
                recorded += breakers.record(self._ctx, project, queue, rules.breaker,
                                            successes, now, session=session)
            return deleted, recorded

        return self._ctx.units.run(change)

    def reject(
        self,
        project: str,
        queue: str,
        message_id: str,
        *,
        claim_id: str,
        client_id: str | None,
        description: str | None,
        retry_after: int | None,
        rules: DeliveryRules = NO_RULES,
    ) -> None:
        oid = object_id(message_id)

        def change(session: Any) -> tuple[None, list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            doc = None if oid is None else self._ctx.messages.find_one(
                {"_id": oid, "project": project, "queue": queue, **alive(now)},
                session=session)
            if doc is None:
                raise MessageNotFound.gone(message_id)
            check_move(message_id, claim_id,
                       doc["claim_id"] if doc["claim_expires"] > now else None)
            failure = self._failure(project, queue, rules, now, session=session)
            if not self._give_back(doc, claim_id, now, retry_after, failure, description,
                                   session=session):  # its claim ended meanwhile
                check_move(message_id, claim_id, None)
            return None, [event_fields(
                events.REJECTED, now, project, queue, message_id=message_id,
                claim_id=claim_id, client_id=client_id, claim_count=doc["claim_count"],
                detail=events.rejected_detail(description, retry_after),
            ), *self._record_failures(project, queue, rules, [doc], claim_id, description, now,
                                      session=session)]

        self._ctx.units.run(change)

    def _failure(self, project: str, queue: str, rules: DeliveryRules, now: float, *,
                 session: Any) -> Failure:
        """How a reject's failure is taken: nothing (no breaker), charged or forgiven.

        Read from the breaker document before the message's update: a trip
        by another worker in between only makes this failure charged, as if
        it had come just before the trip.
        """
        if rules.breaker is None:
            return Failure.UNRECORDED
        doc = breakers.read_doc(self._ctx, project, queue, session=session)
        return Failure.FORGIVEN if breakers.is_open(doc) else Failure.CHARGED

    def _give_back(self, doc: dict[str, Any], claim_id: str, now: float,
                   retry_after: int | None, failure: Failure, description: str | None, *,
                   session: Any) -> bool:
        """The retry reject of one message held by ``claim_id``: one conditional update."""
        wait = (release_delay(doc["delay_until"], doc["claim_expires"])
                if retry_after is None else retry_after)
        update: dict[str, Any] = {"$set": {"claim_id": None, "claim_expires": 0.0,
                                           "delay_until": now + wait}}
        if failure is not Failure.UNRECORDED:
            update["$set"]["last_failure"] = stored_description(description)
        if failure is Failure.FORGIVEN:
            update["$inc"] = {"forgiven_count": 1}
        left = self._ctx.messages.update_one(
            {"_id": doc["_id"], "project": doc["project"], "queue": doc["queue"],
             **held_by(claim_id, now)},
            update, session=session)
        return left.modified_count == 1

    def _record_failures(self, project: str, queue: str, rules: DeliveryRules,
                         docs: list[dict[str, Any]], claim_id: str, description: str | None,
                         now: float, *, session: Any) -> list[dict[str, Any]]:
        """The breaker's failures of rejected messages (after their updates), its events."""
        if rules.breaker is None or not docs:
            return []
        return breakers.record(self._ctx, project, queue, rules.breaker, [
            Outcome(time=now, failed=True, message_id=str(doc["_id"]),
                    description=stored_description(description), claim_id=claim_id)
            for doc in docs], now, session=session)

    def _move(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        move: Move,
        *,
        claim_id: str | None = None,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> list[str]:
        ids = _object_ids(message_ids)
        if not ids:
            return []
        # A move by a claim's holder is a terminal reject: a failure.
        terminal = claim_id is not None and rules.breaker is not None

        def change(session: Any) -> tuple[list[str], list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            docs = list(self._ctx.messages.find(
                {"_id": {"$in": ids}, "project": project, "queue": queue, **alive(now)},
                sort=[("marker", 1)], session=session,
            ))
            # Every message checked before any moves: a mismatch moves nothing.
            chosen = [
                doc for doc in docs
                if check_move(str(doc["_id"]), claim_id,
                              doc["claim_id"] if doc["claim_expires"] > now else None)
            ]
            failure = (self._failure(project, queue, rules, now, session=session)
                       if terminal else Failure.UNRECORDED)
            if failure is Failure.FORGIVEN and claim_id is not None:
                # The breaker is open: held as a retry reject, description kept.
                held = [doc for doc in chosen
                        if self._give_back(doc, claim_id, now, None, failure, move.description,
                                           session=session)]
                return [str(doc["_id"]) for doc in held], [
                    *(event_fields(events.REJECTED, now, project, queue,
                                   message_id=str(doc["_id"]), claim_id=claim_id,
                                   client_id=client_id, claim_count=doc["claim_count"],
                                   detail=events.rejected_detail(move.description, None,
                                                                 held=True))
                      for doc in held),
                    *self._record_failures(project, queue, rules, held, claim_id,
                                           move.description, now, session=session)]
            if chosen:
                ensure_queue(self._ctx, project, move.to, session=session)
            # Each move is conditional on the state just checked: a message a
            # claim took or left meanwhile stays where it is.
            state = (held_by(claim_id, now) if claim_id is not None
                     else {**alive(now), "claim_expires": {"$lte": now}})
            last_failure = (stored_description(move.description)
                            if failure is Failure.CHARGED else UNSET)
            moved = [doc for doc in chosen
                     if move_document(self._ctx, doc, move, now, state=state, session=session,
                                      last_failure=last_failure)]
            recorded = [moved_event(doc, move, now, claim_id=claim_id, client_id=client_id)
                        for doc in moved]
            if failure is Failure.CHARGED and claim_id is not None:
                recorded += self._record_failures(project, queue, rules, moved, claim_id,
                                                  move.description, now, session=session)
            return [str(doc["_id"]) for doc in moved], recorded

        return self._ctx.units.run(change)

    def pop(
        self,
        project: str,
        queue: str,
        *,
        limit: int,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> list[MessageRecord]:
        def change(session: Any) -> tuple[list[MessageRecord], list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            breaker_doc = None
            if rules.breaker is not None:
                breaker_doc = breakers.read_doc(self._ctx, project, queue, session=session)
                if breakers.is_open(breaker_doc):
                    return [], []  # an open breaker lets only claimed probes through

            def deliver(candidate: dict[str, Any],
                        lapse: LapseChange | None) -> dict[str, Any] | None:
                doc = self._ctx.messages.find_one_and_delete(
                    {"_id": candidate["_id"], "project": project, "queue": queue,
                     "claim_count": candidate["claim_count"], **free(now),
                     **lapse_filter(lapse)},
                    session=session,
                )
                if doc is None:
                    return None
                # Pop counts as a claim: the returned record shows it, and
                # what the lapse it consumed did to the message.
                shown = {**doc, "claim_count": doc["claim_count"] + 1}
                if lapse is not None:
                    shown.update(lapse.set)
                    shown["forgiven_count"] = doc.get("forgiven_count", 0) + lapse.forgiven
                return shown

            walked = take_batch(
                self._ctx, project, queue, limit=limit, now=now, client_id=client_id,
                dead_letter=rules.dead_letter, deliver=deliver, session=session,
                discover=lapses.discoverer(self._ctx, project, queue, rules, breaker_doc,
                                           client_id, now, session=session),
            )
            popped, recorded = walked.delivered, walked.moved
            if rules.breaker is not None:
                recorded += breakers.record(self._ctx, project, queue, rules.breaker,
                                            walked.outcomes, now, session=session)
            recorded += [
                event_fields(events.DELETED, now, project, queue, message_id=str(doc["_id"]),
                          client_id=client_id, claim_count=doc["claim_count"],
                          detail=events.popped_detail())
                for doc in popped
            ]
            return [to_record(doc, now) for doc in popped], recorded

        return self._ctx.units.run(change)


def _new_document(
    project: str,
    queue: str,
    message: NewMessage,
    marker: int,
    client_id: str | None,
    now: float,
) -> dict[str, Any]:
    expires = now + message.ttl
    return {
        "_id": ObjectId(message.id) if message.id else ObjectId(),
        "project": project,
        "queue": queue,
        "marker": marker,
        "body": message.body,
        "fingerprint": message.fingerprint,
        "ttl": message.ttl,
        "created": now,
        "expires": expires,
        "expires_at": expiry_date(expires, now),
        "client_id": client_id,
        "claim_id": None,
        "claim_expires": 0.0,
        "delay_until": now + message.delay,
        "claim_count": 0,
        "history": [],
    }


def _deleted_event(doc: dict[str, Any], now: float, client_id: str | None) -> dict[str, Any]:
    held = doc["claim_expires"] > now
    return event_fields(
        events.DELETED, now, doc["project"], doc["queue"],
        message_id=str(doc["_id"]), claim_id=doc["claim_id"] if held else None,
        client_id=client_id, claim_count=doc["claim_count"],
    )


def _object_ids(message_ids: Sequence[str]) -> list[ObjectId]:
    """The valid ids among ``message_ids``, in order, without repeats."""
    seen: dict[ObjectId, None] = {}
    for text in message_ids:
        oid = object_id(text)
        if oid is not None:
            seen.setdefault(oid, None)
    return list(seen)
