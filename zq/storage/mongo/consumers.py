"""The consumer log on MongoDB: one ``consumers`` document per claim (``_id``: claim id)."""

from __future__ import annotations

from typing import Any

from zq.storage.consumer_log import ConsumerLog
from zq.storage.records import ConsumerClaim


def write_record(collection: Any, project: str, queue: str, claim: ConsumerClaim, *,
                 forget_before: float, session: Any = None) -> None:
    """ConsumerLog.record; in the claim's transaction when given its session.

    Two single-document writes: the record is advisory (ConsumerLog), and
    without transactions a forgotten old record or a lost new one never
    touches a message.
    """
    collection.delete_many({"project": project, "queue": queue,
                            "expires": {"$lt": forget_before}}, session=session)
    collection.insert_one({"_id": claim.claim_id, "project": project, "queue": queue,
                           "client_id": claim.client_id, "ttl": claim.ttl,
                           "claimed": claim.claimed, "expires": claim.expires,
                           "settled": claim.settled}, session=session)


def write_settle(collection: Any, project: str, queue: str, claim_id: str, *, now: float,
                 ended: bool, session: Any = None) -> None:
    """ConsumerLog.settle; in a delete's transaction when given its session."""
    mine = {"_id": claim_id, "project": project, "queue": queue}
    collection.update_one({**mine, "settled": None}, {"$set": {"settled": now}},
                          session=session)
    if ended:
        collection.update_one({**mine, "expires": {"$gt": now}}, {"$set": {"expires": now}},
                              session=session)


class MongoConsumers(ConsumerLog):
    def __init__(self, database: Any) -> None:
        self._c = database["consumers"]

    def record(self, project: str, queue: str, claim: ConsumerClaim, *,
               forget_before: float) -> None:
        write_record(self._c, project, queue, claim, forget_before=forget_before)

    def settle(self, project: str, queue: str, claim_id: str, *, now: float,
               ended: bool) -> None:
        write_settle(self._c, project, queue, claim_id, now=now, ended=ended)

    def extend(self, project: str, queue: str, claim_id: str, *, ttl: int,
               now: float) -> None:
        mine = {"_id": claim_id, "project": project, "queue": queue}
        self._c.update_one({**mine, "expires": {"$gt": now}},
                           {"$set": {"expires": now + ttl, "ttl": ttl}})
        self._c.update_one({**mine, "expires": {"$lte": now}, "settled": None},
                           {"$set": {"settled": now}})

    def forget(self, project: str, queue: str) -> None:
        self._c.delete_many({"project": project, "queue": queue})

    def claims(self, project: str, queue: str, *, expires_after: float,
               client_id: str | None = None) -> list[ConsumerClaim]:
        query: dict[str, Any] = {"project": project, "queue": queue,
                                 "expires": {"$gte": expires_after}}
        if client_id is not None:
            query["client_id"] = client_id
        return [ConsumerClaim(client_id=d["client_id"], claim_id=d["_id"], ttl=d["ttl"],
                              claimed=d["claimed"], expires=d["expires"],
                              settled=d.get("settled"))
                for d in self._c.find(query)]
