"""Claims: a document per claim in ``claims``; messages point at it by id.

A message is held while its ``claim_id`` names the claim and its
``claim_expires`` (kept equal to the claim's expiry) lies ahead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bson import ObjectId
from pymongo import ReturnDocument

from zq import events
from zq.errors import ClaimNotFound
from zq.events import event_fields
from zq.poison.backoff import release_delay
from zq.storage.base import ClaimController
from zq.storage.delivery_rules import NO_RULES, DeliveryRules
from zq.storage.mongo import breakers, lapses
from zq.storage.mongo.consumers import write_record
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.delivery import lapse_filter, merged, take_batch
from zq.storage.mongo.documents import expiry_date, free, held_by, object_id, to_record
from zq.storage.mongo.lapses import LapseChange
from zq.storage.records import ClaimRecord


class MongoClaims(ClaimController):
    def __init__(self, ctx: MongoContext) -> None:
        self._ctx = ctx

    def create(
        self,
        project: str,
        queue: str,
        *,
        ttl: int,
        grace: int,
        limit: int,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> ClaimRecord | None:
        backoff, consumer = rules.backoff, rules.consumer

        def change(session: Any) -> tuple[ClaimRecord | None, list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            claim_expires = now + ttl
            claim = _new_claim(project, queue, ttl, grace, client_id, now)
            claim_id = str(claim["_id"])
            recorded: list[dict[str, Any]] = []
            breaker_doc = reserved = None
            batch = limit
            if rules.breaker is not None:
                breaker_doc = breakers.read_doc(self._ctx, project, queue, session=session)
                if breakers.is_open(breaker_doc):
                    # Open: one probe per interval, reserved on the breaker
                    # document before anything is delivered.
                    assert breaker_doc is not None
                    gate = breakers.probe_gate(
                        self._ctx, project, queue, rules.breaker, breaker_doc, claim_id,
                        claim_expires, now, session=session)
                    reserved, recorded = gate.reserved, list(gate.recorded or [])
                    if gate.lapsed_probe is not None:
                        recorded += self._hold_lapsed_probe(project, queue, rules,
                                                            gate.lapsed_probe, client_id, now,
                                                            session=session)
                    if reserved is None:
                        return None, recorded
                    batch = 1
            # The claim exists before any message points at it; a crash
            # mid-walk leaves a claim that simply expires.
            self._ctx.claims.insert_one(claim, session=session)
            message_expires = claim_expires + grace

            def deliver(candidate: dict[str, Any],
                        lapse: LapseChange | None) -> dict[str, Any] | None:
                held: dict[str, Any] = {"claim_id": claim_id, "claim_expires": claim_expires,
                                        "claim_client": client_id}
                if backoff is not None:
                    # Claimable again at the claim's expiry plus its backoff:
                    # an expiry of the claim implies it (zq.poison.backoff).
                    held["delay_until"] = claim_expires + backoff.delay_for(
                        candidate["claim_count"] + 1)
                return self._ctx.messages.find_one_and_update(
                    {"_id": candidate["_id"], "project": project, "queue": queue,
                     "claim_count": candidate["claim_count"], **free(now),
                     **lapse_filter(lapse)},
                    merged({
                        "$set": held,
                        "$inc": {"claim_count": 1},
                        "$max": {
                            "expires": message_expires,
                            "expires_at": expiry_date(message_expires, now),
                        },
                    }, lapse),
                    return_document=ReturnDocument.AFTER,
                    session=session,
                )

            walked = take_batch(
                self._ctx, project, queue, limit=batch, now=now, client_id=client_id,
                dead_letter=rules.dead_letter, deliver=deliver, session=session,
                discover=lapses.discoverer(self._ctx, project, queue, rules, breaker_doc,
                                           client_id, now, session=session),
            )
            recorded += walked.moved
            # The lapses the walk consumed, after the messages' updates.
            changed = ([] if rules.breaker is None else breakers.record(
                self._ctx, project, queue, rules.breaker, walked.outcomes, now,
                session=session))
            if not walked.delivered:
                if reserved is not None:
                    breakers.unreserve(self._ctx, reserved, claim_id, session=session)
                self._ctx.claims.delete_one({"_id": claim["_id"]}, session=session)
                return None, recorded + changed
            taken = walked.delivered
            recorded += [
                event_fields(events.CLAIMED, now, project, queue, message_id=str(doc["_id"]),
                          claim_id=claim_id, client_id=client_id,
                          claim_count=doc["claim_count"])
                for doc in taken
            ] + changed
            record = _claim_record(claim, [to_record(doc, now) for doc in taken])
            if consumer is not None:
                # In the claim's unit: its transaction where the server has them.
                write_record(self._ctx.database["consumers"], project, queue,
                             consumer.record(claim_id, ttl, now),
                             forget_before=consumer.forget_before(now), session=session)
            return record, recorded

        return self._ctx.units.run(change)

    def _hold_lapsed_probe(self, project: str, queue: str, rules: DeliveryRules,
                           probe: str, client_id: str | None, now: float, *,
                           session: Any) -> list[dict[str, Any]]:
        """The lapse of the probe the gate found: judged now, its message held back.

        Held back (BreakerPolicy.probe_hold), the walk would not meet the
        message for a while: its lapse is judged here as the walk would, and
        the same update clears the lapsed claim so that no walk judges it again.
        """
        assert rules.breaker is not None
        breaker_doc = breakers.read_doc(self._ctx, project, queue, session=session)
        held_until = rules.breaker.probe_hold(now)
        outcomes = []
        for doc in list(self._ctx.messages.find(
                {"project": project, "queue": queue, "claim_id": probe,
                 "claim_expires": {"$lte": now}}, session=session)):
            lapse = lapses.discover(self._ctx, project, queue, doc, rules, breaker_doc,
                                    client_id, now, session=session)
            done = self._ctx.messages.update_one(
                {"_id": doc["_id"], "claim_id": probe},
                merged({"$set": {"claim_id": None, "claim_expires": 0.0},
                        "$max": {"delay_until": held_until}}, lapse), session=session)
            if done.modified_count and lapse is not None and lapse.outcome is not None:
                outcomes.append(lapse.outcome)
        return breakers.record(self._ctx, project, queue, rules.breaker, outcomes, now,
                               session=session)

    def get(self, project: str, queue: str, claim_id: str) -> ClaimRecord:
        now = self._ctx.clock.now()
        claim = self._live_claim(project, queue, claim_id, now)
        docs = self._ctx.messages.find(
            {"project": project, "queue": queue, **held_by(claim_id, now)},
            sort=[("marker", 1)],
        )
        return _claim_record(claim, [to_record(doc, now) for doc in docs])

    def renew(
        self,
        project: str,
        queue: str,
        claim_id: str,
        *,
        ttl: int,
        grace: int,
        client_id: str | None,
    ) -> None:
        def change(session: Any) -> tuple[None, list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            claim_expires = now + ttl
            oid = object_id(claim_id)
            claim = None if oid is None else self._ctx.claims.find_one_and_update(
                {"_id": oid, "project": project, "queue": queue, "expires": {"$gt": now}},
                {"$set": {"ttl": ttl, "grace": grace, "expires": claim_expires,
                          "expires_at": expiry_date(claim_expires, now)}},
                session=session,
            )
            if claim is None:
                raise ClaimNotFound.gone(claim_id)
            held = {"project": project, "queue": queue, **held_by(claim_id, now)}
            docs = list(self._ctx.messages.find(
                held, {"_id": 1, "delay_until": 1, "claim_expires": 1},
                sort=[("marker", 1)], session=session))
            ids = [doc["_id"] for doc in docs]
            message_expires = claim_expires + grace
            # Each message keeps the backoff its claim gave it, past the new expiry.
            self._write_each(docs, held, lambda doc: {
                "$set": {
                    "claim_expires": claim_expires,
                    "delay_until": claim_expires + release_delay(
                        doc["delay_until"], doc["claim_expires"]),
                },
                "$max": {
                    "expires": message_expires,
                    "expires_at": expiry_date(message_expires, now),
                },
            }, session)
            return None, self._held_events(events.RENEWED, project, queue, claim_id,
                                           client_id, ids, now, session)

        self._ctx.units.run(change)

    def release(
        self, project: str, queue: str, claim_id: str, *, client_id: str | None
    ) -> None:
        oid = object_id(claim_id)
        if oid is None:
            return

        def change(session: Any) -> tuple[None, list[dict[str, Any]]]:
            now = self._ctx.clock.now()
            # An expired claim is left for gc, which records its expiry.
            claim = self._ctx.claims.find_one_and_delete(
                {"_id": oid, "project": project, "queue": queue, "expires": {"$gt": now}},
                session=session,
            )
            if claim is None:
                return None, []
            held = {"project": project, "queue": queue, **held_by(claim_id, now)}
            docs = list(self._ctx.messages.find(
                held, {"_id": 1, "delay_until": 1, "claim_expires": 1},
                sort=[("marker", 1)], session=session))
            ids = [doc["_id"] for doc in docs]
            # Free again once the backoff its claim gave it has passed from now.
            self._write_each(docs, held, lambda doc: {"$set": {
                "claim_id": None,
                "claim_expires": 0.0,
                "delay_until": now + release_delay(doc["delay_until"], doc["claim_expires"]),
            }}, session)
            return None, self._held_events(events.RELEASED, project, queue, claim_id,
                                           client_id, ids, now, session)

        self._ctx.units.run(change)

    def _write_each(
        self,
        docs: list[dict[str, Any]],
        held: dict[str, Any],
        update: Callable[[dict[str, Any]], dict[str, Any]],
        session: Any,
    ) -> None:
        """One conditional update per held message (its values depend on the message)."""
        for doc in docs:
            self._ctx.messages.update_one({**held, "_id": doc["_id"]}, update(doc),
                                        session=session)

    def _live_claim(self, project: str, queue: str, claim_id: str, now: float) -> dict[str, Any]:
        oid = object_id(claim_id)
        claim = None if oid is None else self._ctx.claims.find_one(
            {"_id": oid, "project": project, "queue": queue, "expires": {"$gt": now}}
        )
        if claim is None:
            raise ClaimNotFound.gone(claim_id)
        return claim

    def _held_events(
        self,
        kind: str,
        project: str,
        queue: str,
        claim_id: str,
        client_id: str | None,
        ids: list[ObjectId],
        now: float,
        session: Any,
    ) -> list[dict[str, Any]]:
        """One event per message the claim held, with its claim count."""
        docs = self._ctx.messages.find(
            {"_id": {"$in": ids}}, {"claim_count": 1, "marker": 1},
            sort=[("marker", 1)], session=session,
        )
        return [
            event_fields(kind, now, project, queue, message_id=str(doc["_id"]),
                      claim_id=claim_id, client_id=client_id,
                      claim_count=doc["claim_count"])
            for doc in docs
        ]


def _new_claim(
    project: str, queue: str, ttl: int, grace: int, client_id: str | None, now: float
) -> dict[str, Any]:
    expires = now + ttl
    return {
        "_id": ObjectId(),
        "project": project,
        "queue": queue,
        "ttl": ttl,
        "grace": grace,
        "created": now,
        "expires": expires,
        "expires_at": expiry_date(expires, now),
        "client_id": client_id,
    }


def _claim_record(claim: dict[str, Any], messages: list[Any]) -> ClaimRecord:
    return ClaimRecord(
        id=str(claim["_id"]),
        queue=claim["queue"],
        ttl=claim["ttl"],
        grace=claim["grace"],
        created=claim["created"],
        expires=claim["expires"],
        messages=messages,
    )

