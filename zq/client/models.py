"""What zq.client returns: plain frozen values built from zq's JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True, slots=True)
class Message:
    """A message as zq shows it. ``claim_id`` is set on claimed messages.

    Asked for with ``include_history=True`` (zq; a Zaqar server, or a zq
    from before these fields, leaves them out and they keep their
    defaults):

    - ``history``: the compacted moves and lapses of the message (None
      when it has none);
    - ``redrive_count``: the redrives it went through (None when not asked);
    - ``forgiven_count``: deliveries not charged to it because its queue's
      breaker was open or the blame split put a lapse on the consumer
      (``_max_claim_count`` compares ``claim_count - forgiven_count``); 0
      when none was, as the server then leaves it out;
    - ``last_failure``: the description of its last failed delivery (at
      most 200 characters), recorded on a queue with a breaker and kept
      when the message moves; None when none was recorded or its last
      failure was a lapse.
    """

    id: str
    body: Any
    ttl: int
    age: int
    claim_count: int = 0
    claim_id: str | None = None
    history: list[dict[str, Any]] | None = None
    redrive_count: int | None = None
    forgiven_count: int = 0
    last_failure: str | None = None

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Message:
        query = parse_qs(urlsplit(doc.get("href", "")).query)
        claim = query.get("claim_id", [None])[0]
        return cls(id=doc["id"], body=doc.get("body"), ttl=doc.get("ttl", 0),
                   age=doc.get("age", 0), claim_count=doc.get("claim_count", 0),
                   claim_id=claim, history=doc.get("history"),
                   redrive_count=doc.get("redrive_count"),
                   forgiven_count=doc.get("forgiven_count", 0),
                   last_failure=doc.get("last_failure"))


@dataclass(frozen=True, slots=True)
class Claim:
    """A claim and the messages it holds."""

    id: str
    queue: str
    messages: list[Message] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ClaimAnswer:
    """One claim request's outcome (``Client.claim_answer``).

    ``waited``: the wait the server says it honoured (zq's ``X-Zq-Wait``
    header, on claims that asked to wait); None when the answer had no such
    header (Zaqar, or zq before long polling). ``seconds``: how long the
    request took, measured by the client.
    """

    claim: Claim | None
    waited: float | None
    seconds: float


@dataclass(frozen=True, slots=True)
class QueueStats:
    free: int
    claimed: int
    total: int
    delayed: int = 0
    # zq: claims waiting for a message on the queue (long poll); None when
    # the server does not say (Zaqar, zq before long polling).
    waiting: int | None = None
    # zq: the queue's outage breaker; None when it is off (no
    # ``_breaker_failure_ratio``) or the server has none.
    breaker: BreakerInfo | None = None


@dataclass(frozen=True, slots=True)
class BreakerInfo:
    """A queue's outage breaker as ``GET .../stats`` shows it (zq)."""

    state: str  # "closed", "open" or "half-open"
    since: str  # ISO 8601, UTC
    description: str | None  # the failure most failures in the window shared


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """One Client-ID of ``GET /v2/queues/{q}/consumers`` (zq)."""

    client_id: str
    last_claim: float | None  # None: it only waits, it has claimed nothing yet
    live_claims: int
    lapsed_claims: int
    suspected: bool
    waiting: int = 0  # its claims waiting for a message (long poll)


@dataclass(frozen=True, slots=True)
class RedriveResult:
    """The answer of ``POST /v2/queues/{dlq}/redrive`` (zq)."""

    matched: int
    moved: int
    to: dict[str, int]
    next: str | None
    created: tuple[str, ...] = ()  # destinations the call created ("create": true)
    unreadable: tuple[str, ...] = ()  # ids a fingerprint filter could not judge (left in place)
