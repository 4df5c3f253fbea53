"""Consumers and suspected consumers: the rule, above the storage contract.

``GET /v2/queues/{q}/consumers`` lists the Client-IDs that claimed from a
queue in the last hour (``WINDOW``) with their live and lapsed claims. A
claim *lapsed* when it expired before any delete, reject or release named
it (its final expiry counts: a renewed claim that then expires unsettled
lapsed too). With ``_suspect_lapsed_consumers: true`` on the queue, a
Client-ID with a lapsed claim is *suspected*: its claims answer 204 with
the lapsed claim's id (header ``X-Zq-Suspected``) until it shows it is
alive (a delete, reject, release or renew naming that claim, even late) or
until one claim ttl (the lapsed claim's) has passed since the lapse.

The log (ConsumerLog) is written just after the operation it describes,
not inside the claim's atomic step: it is advisory, and keeping it out of
the claim scripts and transactions leaves every driver's delivery path as
it is. A crash in between forgets one claim or one settle (the consumer
is then shown with one claim fewer, or suspected for at most one claim
ttl); it never touches a message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from zq import validation
from zq.storage.base import ClaimRecord, ConsumerClaim, ConsumerLog

SUSPECT_LAPSED_CONSUMERS = "_suspect_lapsed_consumers"
HEADER = "X-Zq-Suspected"
# How far back GET .../consumers looks, by last claim.
WINDOW = 3600.0
# How many settled claim ids a process remembers, so that the deletes of a
# batch settle its claim with one write instead of one per message.
SETTLED_CACHE = 4096


@dataclass(frozen=True, slots=True)
class Consumer:
    """One Client-ID as GET .../consumers shows it."""

    client_id: str
    last_claim: float
    live_claims: int
    lapsed_claims: int
    suspected: bool

    def document(self) -> dict[str, Any]:
        return {"client_id": self.client_id, "last_claim": self.last_claim,
                "live_claims": self.live_claims, "lapsed_claims": self.lapsed_claims,
                "suspected": self.suspected}


class Suspected(Exception):
    """A claim refused to a suspected consumer (answered 204, never an error)."""

    def __init__(self, lapsed_claim_id: str) -> None:
        super().__init__(lapsed_claim_id)
        self.lapsed_claim_id = lapsed_claim_id


def check_setting(value: Any) -> bool:
    """``_suspect_lapsed_consumers``: a JSON boolean."""
    return validation.boolean(value, SUSPECT_LAPSED_CONSUMERS)


def enabled(metadata: dict[str, Any]) -> bool:
    return metadata.get(SUSPECT_LAPSED_CONSUMERS) is True


def lapsed(claim: ConsumerClaim, now: float) -> bool:
    """Expired before anything named it (settled after expiry still lapsed)."""
    return claim.expires <= now and (claim.settled is None or claim.settled > claim.expires)


def suspicion(claim: ConsumerClaim, now: float) -> bool:
    """Whether this lapsed claim still makes its holder suspected."""
    return (lapsed(claim, now) and claim.settled is None
            and now < claim.expires + claim.ttl)


def forget_before(now: float, max_claim_ttl: int) -> float:
    """Records that expired before this are read by neither rule."""
    return now - max(WINDOW, float(max_claim_ttl))


def summarize(claims: Iterable[ConsumerClaim], now: float, *,
              suspecting: bool) -> list[Consumer]:
    """Per Client-ID that claimed in the last WINDOW, by most recent claim first.

    ``suspected`` only where the queue suspects (``suspecting``): elsewhere
    a lapse changes nothing for the client, and the listing says so.
    """
    by_client: dict[str, list[ConsumerClaim]] = {}
    for claim in claims:
        by_client.setdefault(claim.client_id, []).append(claim)
    shown = []
    for client_id, mine in by_client.items():
        last = max(c.claimed for c in mine)
        if last < now - WINDOW:
            continue
        shown.append(Consumer(
            client_id=client_id, last_claim=last,
            live_claims=sum(1 for c in mine if c.expires > now),
            lapsed_claims=sum(1 for c in mine if lapsed(c, now)),
            suspected=suspecting and any(suspicion(c, now) for c in mine)))
    shown.sort(key=lambda c: (-c.last_claim, c.client_id))
    return shown


class ConsumerRule:
    """What the service does with a queue's consumer log around each call."""

    def __init__(self, max_claim_ttl: int) -> None:
        self._max_claim_ttl = max_claim_ttl
        self._settled: OrderedDict[str, None] = OrderedDict()

    def list(self, log: ConsumerLog, project: str, queue: str, metadata: dict[str, Any],
             now: float) -> list[Consumer]:
        claims = log.claims(project, queue,
                            expires_after=forget_before(now, self._max_claim_ttl))
        return summarize(claims, now, suspecting=enabled(metadata))

    def check(self, log: ConsumerLog, project: str, queue: str, client_id: str | None,
              metadata: dict[str, Any], now: float) -> None:
        """Raise Suspected when the queue asks for it and ``client_id`` is suspected."""
        if client_id is None or not enabled(metadata):
            return
        mine = log.claims(project, queue, client_id=client_id,
                          expires_after=now - self._max_claim_ttl)
        open_ = sorted((c for c in mine if suspicion(c, now)), key=lambda c: c.expires)
        if open_:
            raise Suspected(open_[-1].claim_id)

    def claimed(self, log: ConsumerLog, project: str, queue: str, client_id: str | None,
                claim: ClaimRecord) -> None:
        if client_id is None:
            return
        log.record(project, queue, ConsumerClaim(
            client_id=client_id, claim_id=claim.id, ttl=claim.ttl, claimed=claim.created,
            expires=claim.expires), forget_before=forget_before(
                claim.created, self._max_claim_ttl))

    def settled(self, log: ConsumerLog, project: str, queue: str, claim_id: str | None,
                now: float, *, ended: bool = False) -> None:
        """A delete, reject (ended False) or release (ended True) named ``claim_id``."""
        if not claim_id or not validation.is_id_shaped(claim_id):
            return
        key = f"{project}\n{queue}\n{claim_id}"
        if not ended and key in self._settled:
            return  # settle is idempotent: this process already wrote it
        log.settle(project, queue, claim_id, now=now, ended=ended)
        self._settled[key] = None
        if len(self._settled) > SETTLED_CACHE:
            self._settled.popitem(last=False)

    def renewed(self, log: ConsumerLog, project: str, queue: str, claim_id: str,
                ttl: int, now: float) -> None:
        if validation.is_id_shaped(claim_id):
            log.extend(project, queue, claim_id, ttl=ttl, now=now)
