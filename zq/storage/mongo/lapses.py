"""A lapse met by a delivery walk: blame (zq.poison.blame) and the breaker's failure.

A free message that still names a claim (``claim_id`` set, ``claim_expires``
passed) lapsed: a delete, reject, release or move would have cleared it.
The claim or pop whose walk meets it decides, once, what the lapse does,
and the walk's single-document update of that message (its delivery, or
its dead letter move) writes it, conditioned on the message still naming
the lapsed claim: the update that takes the message also consumes its
lapse, so a lapse is never counted twice. The breaker's failure is
recorded after the walk (zq.storage.mongo.breakers.record).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zq.poison import blame, moves
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.mongo.breakers import Outcome, outage_lapse
from zq.storage.mongo.context import MongoContext
from zq.storage.mongo.documents import object_id


@dataclass(frozen=True, slots=True)
class LapseChange:
    """What one discovered lapse writes into its message, and records."""

    claim_id: str  # the lapsed claim: the message update requires it still named
    forgiven: int  # 1: not charged toward _max_claim_count
    set: dict[str, Any] = field(default_factory=dict)  # fields the message update sets
    lapse: blame.Lapse | None = None  # the blame decision (blame split on)
    outcome: Outcome | None = None  # the breaker's failure (breaker on)

    def update(self) -> dict[str, Any]:
        """The update fragment of the message's delivery that consumes the lapse."""
        update: dict[str, Any] = {}
        if self.set:
            update["$set"] = dict(self.set)
        if self.forgiven:
            update["$inc"] = {"forgiven_count": self.forgiven}
        return update

    def exhausting_move(self, dead_letter: DeadLetterPolicy) -> moves.Move:
        """The move of a message this lapse leaves exhausted."""
        if self.lapse is not None and self.lapse.charged_to == blame.MESSAGE:
            return moves.lapsed(dead_letter.queue, dead_letter.ttl,
                                blame.exhaustion_description(self.lapse.lapsed_with))
        return dead_letter.move


def lapsed(candidate: dict[str, Any]) -> bool:
    """Whether a free candidate still names the claim it lapsed with."""
    return candidate.get("claim_id") is not None


def discover(
    ctx: MongoContext,
    project: str,
    queue: str,
    candidate: dict[str, Any],
    rules: DeliveryRules,
    breaker: dict[str, Any] | None,
    claimer: str | None,
    now: float,
    *,
    session: Any,
) -> LapseChange | None:
    """The lapse of ``candidate``, or None (none, or neither feature on: Zaqar's rule).

    ``breaker`` is the breaker document read by the step, ``claimer`` the
    Client-ID of the claim or pop being made.
    """
    if not lapsed(candidate) or (rules.breaker is None and not rules.blame_split):
        return None
    claim_id = candidate["claim_id"]
    expired = candidate["claim_expires"]
    outage = rules.breaker is not None and outage_lapse(breaker, expired)
    changes: dict[str, Any] = {}
    judged = None
    if rules.blame_split:
        client = _client_of(ctx, candidate, session=session)
        known = tuple(candidate.get("lapsed_with") or ())
        suspected = (client is not None and not outage and len(known) < blame.LAPSED_WITH
                     and _suspected(ctx, project, queue, client, claim_id, expired, now,
                                    claimer, session=session))
        judged = blame.judge(known, client, suspected=suspected, outage=outage)
        changes["lapsed_with"] = list(judged.lapsed_with)
        # The entry is dated at the lapse: when the claim expired.
        changes["history"] = blame.with_lapse(
            candidate.get("history", []), blame.lapse_entry(queue, expired, client, judged))
        forgiven = judged.forgiven
    else:
        forgiven = outage
    outcome = None
    if rules.breaker is not None:
        changes["last_failure"] = None  # a lapse has no description
        outcome = Outcome(time=expired, failed=True, message_id=str(candidate["_id"]),
                          claim_id=claim_id)
    return LapseChange(claim_id=claim_id, forgiven=int(forgiven), set=changes, lapse=judged,
                       outcome=outcome)


def _client_of(ctx: MongoContext, candidate: dict[str, Any], *, session: Any) -> str | None:
    """The Client-ID of the lapsed claim: kept on the message by the claim that took it;
    for a message taken before that field existed, the consumer log's or the claim's."""
    if "claim_client" in candidate:
        return candidate["claim_client"]
    record = ctx.consumers.find_one({"_id": candidate["claim_id"]}, {"client_id": 1},
                                    session=session)
    if record is not None:
        return record["client_id"]
    oid = object_id(candidate["claim_id"])
    claim = None if oid is None else ctx.claims.find_one({"_id": oid}, {"client_id": 1},
                                                         session=session)
    return None if claim is None else claim.get("client_id")


def _suspected(ctx: MongoContext, project: str, queue: str, client: str, claim_id: str,
               expired: float, now: float, claimer: str | None, *, session: Any) -> bool:
    """zq.poison.blame.suspects, from the queue's consumer log."""
    mine = {"project": project, "queue": queue, "client_id": client}
    other = ctx.consumers.count_documents(
        {**mine, "expires": {"$lte": now}, "settled": None, "_id": {"$ne": claim_id}},
        limit=1, session=session)
    since = ctx.consumers.count_documents({**mine, "claimed": {"$gte": expired}},
                                          limit=1, session=session)
    return blame.suspects(other_unsettled_lapses=other,
                          claims_since=since + (1 if claimer == client else 0))


def discoverer(
    ctx: MongoContext,
    project: str,
    queue: str,
    rules: DeliveryRules,
    breaker: dict[str, Any] | None,
    claimer: str | None,
    now: float,
    *,
    session: Any,
) -> Callable[[dict[str, Any]], LapseChange | None] | None:
    """The walk's ``discover`` for one claim or pop; None when neither feature is on."""
    if rules.breaker is None and not rules.blame_split:
        return None
    return lambda candidate: discover(ctx, project, queue, candidate, rules, breaker, claimer,
                                      now, session=session)
