"""Messages: post, read, delete and pop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bson import ObjectId

from zq import events
from zq.errors import MessageNotFound
from zq.events import event_fields
from zq.poison.backoff import release_delay
from zq.poison.moves import Move
from zq.storage.base import MessageController
from zq.storage.checks import check_delete, check_move
from zq.storage.delivery_rules import NO_RULES, DeliveryRules
from zq.storage.mongo.consumers import write_settle
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.counters import markers_key, reserve
from zq.storage.mongo.delivery import take_batch
from zq.storage.mongo.documents import (
    alive,
    expiry_date,
    free,
    held_by,
    object_id,
    to_record,
)
from zq.storage.mongo.moves import move_document, moved_event
from zq.storage.mongo.queues import ensure_queue
from zq.storage.records import MessageRecord, NewMessage


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
        rules: DeliveryRules = NO_RULES,  # the breaker: not on this driver yet
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
            return None, [_deleted_event(doc, now, client_id)]

        self._ctx.units.run(change)

    def delete_many(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        *,
        claim_ids: Sequence[str] | None = None,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,  # the breaker: not on this driver yet
    ) -> list[str]:
        ids = _object_ids(message_ids)

        def change(session: Any) -> tuple[list[str], list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            deleted: list[str] = []
            recorded: list[dict[str, Any]] = []
            for oid in ids:
                query = {"_id": oid, "project": project, "queue": queue, **alive(now)}
                if claim_ids is not None:
                    query["claim_id"] = {"$in": list(claim_ids)}
                    query["claim_expires"] = {"$gt": now}
                doc = self._ctx.messages.find_one_and_delete(query, session=session)
                if doc is not None:
                    deleted.append(str(oid))
                    recorded.append(_deleted_event(doc, now, client_id))
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
        rules: DeliveryRules = NO_RULES,  # the breaker: not on this driver yet
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
            wait = (release_delay(doc["delay_until"], doc["claim_expires"])
                    if retry_after is None else retry_after)
            # Conditional on the claim still holding it: one single-document update.
            left = self._ctx.messages.update_one(
                {"_id": oid, "project": project, "queue": queue, **held_by(claim_id, now)},
                {"$set": {"claim_id": None, "claim_expires": 0.0, "delay_until": now + wait}},
                session=session,
            )
            if left.modified_count != 1:  # its claim ended meanwhile
                check_move(message_id, claim_id, None)
            return None, [event_fields(
                events.REJECTED, now, project, queue, message_id=message_id,
                claim_id=claim_id, client_id=client_id, claim_count=doc["claim_count"],
                detail=events.rejected_detail(description, retry_after),
            )]

        self._ctx.units.run(change)

    def _move(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        move: Move,
        *,
        claim_id: str | None = None,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,  # the breaker: not on this driver yet
    ) -> list[str]:
        ids = _object_ids(message_ids)
        if not ids:
            return []

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
            if chosen:
                ensure_queue(self._ctx, project, move.to, session=session)
            # Each move is conditional on the state just checked: a message a
            # claim took or left meanwhile stays where it is.
            state = (held_by(claim_id, now) if claim_id is not None
                     else {**alive(now), "claim_expires": {"$lte": now}})
            moved = [doc for doc in chosen
                     if move_document(self._ctx, doc, move, now, state=state, session=session)]
            return [str(doc["_id"]) for doc in moved], [
                moved_event(doc, move, now, claim_id=claim_id, client_id=client_id)
                for doc in moved
            ]

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

            def deliver(candidate: dict[str, Any]) -> dict[str, Any] | None:
                doc = self._ctx.messages.find_one_and_delete(
                    {"_id": candidate["_id"], "project": project, "queue": queue,
                     "claim_count": candidate["claim_count"], **free(now)},
                    session=session,
                )
                # Pop counts as a claim: the returned record shows it.
                return None if doc is None else {**doc, "claim_count": doc["claim_count"] + 1}

            popped, recorded = take_batch(
                self._ctx, project, queue, limit=limit, now=now, client_id=client_id,
                dead_letter=rules.dead_letter, deliver=deliver, session=session,
            )
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
