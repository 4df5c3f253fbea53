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

A claim's record is written inside the claim's own atomic step (the
driver carries a ConsumerEntry from ``ConsumerRule.entry`` into its
transaction or script), so recording a claim costs no extra round trip or
commit. Likewise the first delete (one message, or a batch naming its
claims) of a claim's messages in a process settles the claim inside the
delete's own step (``to_settle``: the driver is told ``settle_claim`` or
``settle_claims``). The other settles (a refused delete, reject, release,
late renew) are written just before or after the
operation they describe, once per claim per process: the log is advisory,
and a crash in between forgets one settle (the consumer is then suspected
for at most one claim ttl); it never touches a message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zq import validation
from zq.storage.records import ConsumerClaim, ConsumerEntry

if TYPE_CHECKING:
    # The rule is handed a log to read and write; it names the contract only as a type.
    from zq.storage.consumer_log import ConsumerLog

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

    def entry(self, client_id: str | None) -> ConsumerEntry | None:
        """What a claim by ``client_id`` writes into the log, in its own step
        (ClaimController.create's ``consumer``); None: nothing (no Client-ID)."""
        if client_id is None:
            return None
        return ConsumerEntry(client_id=client_id,
                             keep_for=max(WINDOW, float(self._max_claim_ttl)))

    def settled(self, log: ConsumerLog, project: str, queue: str, claim_id: str | None,
                now: float, *, ended: bool = False) -> None:
        """A delete, reject (ended False) or release (ended True) named ``claim_id``."""
        if not claim_id or not validation.is_id_shaped(claim_id):
            return
        if not ended and not self.to_settle(project, queue, claim_id):
            return  # settle is idempotent: this process already wrote it
        log.settle(project, queue, claim_id, now=now, ended=ended)
        self.settled_in_step(project, queue, claim_id)

    def to_settle(self, project: str, queue: str, claim_id: str | None) -> bool:
        """Whether a delete naming ``claim_id`` settles it in its own step
        (MessageController.delete's ``settle_claim``): not when this process
        already settled it."""
        if not claim_id or not validation.is_id_shaped(claim_id):
            return False
        return f"{project}\n{queue}\n{claim_id}" not in self._settled

    def settled_in_step(self, project: str, queue: str, claim_id: str) -> None:
        """``claim_id`` is settled (by a delete's own step, or by ``settled``)."""
        self._settled[f"{project}\n{queue}\n{claim_id}"] = None
        if len(self._settled) > SETTLED_CACHE:
            self._settled.popitem(last=False)

    def renewed(self, log: ConsumerLog, project: str, queue: str, claim_id: str,
                ttl: int, now: float) -> None:
        if validation.is_id_shaped(claim_id):
            log.extend(project, queue, claim_id, ttl=ttl, now=now)
