"""The values the storage contract passes and returns, frozen.

Every layer above the contract (the service, api/, analytics/,
notifications/, metrics/, pooling/, the poison rules) reads these records;
the contract itself is zq.storage.base (queues, messages, claims, the event
log, ``Storage``), zq.storage.subscriptions and zq.storage.consumer_log.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
_NO_VALUE: Any = object()  # a field with a default factory left out of a call


def quick_init(cls: type[T]) -> type[T]:
    """Give a frozen, slotted dataclass an ``__init__`` that sets each slot directly.

    dataclasses' own ``__init__`` of a frozen class goes through
    ``object.__setattr__`` (the class's own refuses) once per field; this one
    calls each slot's descriptor: the same parameters, defaults and default
    factories, the same instance, frozen as before. A read of 10 messages
    makes 10 MessageRecords (15 fields: 1.86 -> 1.04 us each), a post of 10
    makes 10 NewMessages.
    """
    params, lines = [], []
    scope: dict[str, Any] = {"_NO_VALUE": _NO_VALUE}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.kw_only or hasattr(cls, "__post_init__"):
            raise TypeError(f"quick_init does not handle {cls.__name__}.{f.name}")
        scope[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        value = f.name
        if f.default is not dataclasses.MISSING:
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_NO_VALUE")
            value = f"_factory_{f.name}() if {f.name} is _NO_VALUE else {f.name}"
        else:
            params.append(f.name)
        lines.append(f"    _set_{f.name}(self, {value})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(lines), scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    return cls


@quick_init
@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to post, validated and with defaults applied."""

    body: str  # JSON text, stored verbatim
    ttl: int  # seconds
    delay: int  # seconds before it can be claimed
    fingerprint: str  # zq.events.fingerprint(body), recorded in events
    # The posted event carries the body as stored (zq.events.BODY): the
    # queue has subscribers (zq.service.subscribed), whose notifier needs it.
    event_body: bool = False
    # The id to store it under, drawn from the same driver's
    # MessageController.new_id before the post (a sealed body is bound to
    # its id, zq.encryption); None: the driver draws one.
    id: str | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class MessageRecord:
    """A stored message as a driver returns it.

    ``history`` holds the raw entries appended by each move, oldest first:
    ``{"queue": source, "reason": str, "time": float}`` plus
    ``"description"`` when the move had one (zq.poison.moves.Move.history_entry),
    and, with blame split, one lapse entry per lapse discovered in place
    (zq.poison.blame.lapse_entry: ``"client_id"`` and ``"charged_to"``).
    zq.poison.history.compact_history turns them into what clients see.
    """

    id: str
    queue: str
    body: str
    ttl: int  # the ttl it was posted with, or given by a dead letter move
    created: float  # when it was posted, or moved into this queue
    expires: float  # may be later than created + ttl: claims extend it
    client_id: str | None  # the Client-ID that posted it
    claim_id: str | None  # the live claim holding it, None when free
    claim_count: int
    history: list[dict[str, Any]] = field(default_factory=list)
    marker: int = 0  # position in its queue's order
    redrive_count: int = 0  # moves with Move.count_redrive (redrives) it went through
    # Deliveries not charged to the message (an open breaker, a lapse blamed
    # on its consumer): DeadLetterPolicy.is_exhausted leaves them out.
    forgiven_count: int = 0
    # The description of its last failed delivery (a reject's, truncated to
    # zq.poison.breaker.DESCRIPTION_CHARS); None after a lapse or a reject
    # without one. Written only on a queue with a breaker (auto-redrive).
    last_failure: str | None = None
    # The distinct Client-IDs its claims lapsed with (at most
    # zq.poison.blame.LAPSED_WITH), kept with blame split on.
    lapsed_with: tuple[str, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True)
class ClaimRecord:
    """A live claim and the alive messages it still holds."""

    id: str
    queue: str
    ttl: int
    grace: int
    created: float
    expires: float
    messages: list[MessageRecord]


@dataclass(frozen=True, slots=True)
class MessageStamp:
    """Id and post time of a message, for queue stats."""

    id: str
    created: float


@dataclass(frozen=True, slots=True)
class QueueStats:
    """Counts of alive messages in one queue."""

    free: int  # alive and not held by a live claim (delayed ones included)
    claimed: int
    oldest: MessageStamp | None = None
    newest: MessageStamp | None = None
    delayed: int = 0  # of ``free``: not claimable yet (a post's delay, or backoff)

    @property
    def total(self) -> int:
        return self.free + self.claimed


@dataclass(frozen=True, slots=True)
class QueueRecord:
    name: str
    metadata: dict[str, Any]


# The metadata version of a queue that does not exist.
MISSING_VERSION = ""
# The metadata version of a queue stored before versions existed (SQL,
# MongoDB): the first write replaces it with a random one.
LEGACY_VERSION = "0"


# Ids drawn ahead, RANDOM_ID_BATCH at a time: one os.urandom call (a
# getrandom system call) and one hex conversion for the batch, where a call
# per id cost most of the id (0.8 us; 0.15 us drawn ahead). list.pop and
# list.extend are atomic, so threads share it; a forked child empties it at
# once (os.register_at_fork), or parent and child would hand out the same.
RANDOM_ID_BATCH = 64
_ID_BYTES = 16
# Byte 6's high half is the version (4); byte 8's top two bits the variant (10).
_VERSION_4 = bytes(i & 0x0F | 0x40 for i in range(256))
_RFC_4122 = bytes(i & 0x3F | 0x80 for i in range(256))
_drawn_ids: list[str] = []
os.register_at_fork(after_in_child=_drawn_ids.clear)


def _draw_ids() -> list[str]:
    raw = bytearray(os.urandom(_ID_BYTES * RANDOM_ID_BATCH))
    raw[6::_ID_BYTES] = raw[6::_ID_BYTES].translate(_VERSION_4)
    raw[8::_ID_BYTES] = raw[8::_ID_BYTES].translate(_RFC_4122)
    text = raw.hex()
    width = 2 * _ID_BYTES
    return [text[i:i + width] for i in range(0, len(text), width)]


def random_id() -> str:
    """32 hex digits of a random (version 4) UUID: the form of uuid.uuid4().hex.

    Drawn without building a UUID object (a post of 10 draws 10 ids, and
    uuid.uuid4() costs four times as much CPU as the 16 random bytes), and
    drawn ahead in batches (``_drawn_ids``).
    """
    try:
        return _drawn_ids.pop()
    except IndexError:
        batch = _draw_ids()
        drawn = batch.pop()
        _drawn_ids.extend(batch)
        return drawn


def random_version() -> str:
    """A metadata version no queue ever had (drivers that draw them at random)."""
    return random_id()


@dataclass(frozen=True, slots=True)
class MetadataRead:
    """A queue's stored metadata (``{}`` for a queue never created) and its version.

    ``version`` is an opaque text that changes whenever the metadata is set
    and whenever the queue is created or deleted, and never comes back to
    an earlier value, except MISSING_VERSION, the version of every missing
    queue.
    """

    metadata: dict[str, Any]
    version: str

    @property
    def exists(self) -> bool:
        """Whether the queue exists (known from the version)."""
        return self.version != MISSING_VERSION


@dataclass(frozen=True)
class Collected:
    """What one garbage collection removed."""

    messages: int = 0  # expired messages, each with its ``expired`` event
    claims: int = 0  # expired claims
    moved: int = 0  # expired messages moved to a dead letter queue (``_dead_letter_expired``)
    subscriptions: int = 0  # expired subscriptions removed

    def __add__(self, other: Collected) -> Collected:
        return Collected(self.messages + other.messages, self.claims + other.claims,
                         self.moved + other.moved, self.subscriptions + other.subscriptions)


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of a backend's event log.

    ``cursor`` is the backend's own position of the event (an increasing
    integer for SQL, a stream id for Redis, an ObjectId for MongoDB), as a
    string; pass it back to ``EventLog.read(after=...)`` and ``trim``.
    """

    cursor: str
    time: float
    project: str
    queue: str
    kind: str  # one of zq.events.KINDS
    message_id: str | None = None
    claim_id: str | None = None
    client_id: str | None = None
    claim_count: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SubscriptionRecord:
    """A live subscription as a driver returns it.

    ``age`` is whole seconds since it was created (the clock's now at the
    read); ``expires`` is created (or the last ttl change) + ``ttl``.
    """

    id: str
    project: str
    queue: str
    subscriber: str  # http(s)://... or mailto:..., unique per (project, queue)
    ttl: int
    expires: float
    options: dict[str, Any]
    confirmed: bool
    age: int


@dataclass(frozen=True, slots=True)
class ConsumerClaim:
    """One claim as the consumer log remembers it (zq.poison.consumers reads these).

    ``expires`` follows renewals, and a release sets it to the release time
    (the claim ended). ``settled`` is the first time a delete, reject or
    release named the claim, or a renew named it after it had expired: the
    moments its holder showed it was alive. None: never.
    """

    client_id: str
    claim_id: str
    ttl: int
    claimed: float
    expires: float
    settled: float | None = None


@dataclass(frozen=True, slots=True)
class ConsumerEntry:
    """What a claim writes into the consumer log in its own atomic step.

    zq.poison.consumers fills it in; a driver only carries its values into the
    claim's transaction or script, with the claim's id and time.
    """

    client_id: str
    # Records that expired more than this many seconds before the claim
    # are read by no rule (zq.poison.consumers.forget_before).
    keep_for: float

    def record(self, claim_id: str, ttl: int, now: float) -> ConsumerClaim:
        return ConsumerClaim(client_id=self.client_id, claim_id=claim_id, ttl=ttl,
                             claimed=now, expires=now + ttl)

    def forget_before(self, now: float) -> float:
        return now - self.keep_for
