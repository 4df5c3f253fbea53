"""The storage contract: what every driver (SQL, Redis, MongoDB) implements.

This module is the definition the contract test suite (tests/contract/)
checks every driver against. Rules that all drivers share (validation,
defaults, which metadata means what, how dead letter history is compacted)
live above this layer; a driver receives already-validated values and only
does what is specific to its backend.

Conventions every driver follows:

- Every operation is scoped by ``project`` (the tenant) and ``queue`` (its
  name). Two projects never see each other's queues, messages, claims.
- Times are POSIX seconds as floats, read from the ``Clock`` the driver was
  built with, never from the system directly.
- A message is *alive* while ``now < expires``; an expired message is
  invisible to every read and write at once, before garbage collection
  removes it. A claim is *live* while ``now < claim expires``; a message
  held by an expired claim is free again.
- A message is *free* when it is alive, not held by a live claim, and not
  delayed (``now >= delay_until``). ``delay_until`` is the one moment a
  message becomes claimable again: a post's delay sets it, and so does the
  backoff between deliveries (zq.backoff): a claim made with a backoff
  policy sets it to the claim's expiry plus the message's backoff, so a
  claim that expires implies the backoff with no write at that moment;
  renewing the claim moves it with the claim's expiry, releasing the claim
  (or a retry reject) makes it now plus the same backoff. A message that
  is alive, unheld and not yet claimable is *delayed*.
- Queue order is the order of posting, per queue (``MessageRecord.marker``
  increases). A message moved into another queue (``MessageController.move``,
  a claim's dead letter move) keeps its marker.
- Every state change writes its event(s) (see zq.events) in the same atomic
  step as the change itself.
- Message bodies are opaque JSON text: the driver stores and returns the
  exact string it was given.
- Queues are created implicitly by posting to them and by a move into them.
"""

from __future__ import annotations

import hashlib
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zq import queue_filter
from zq.backoff import BackoffPolicy
from zq.dead_letter import DeadLetterPolicy
from zq.errors import ClaimMismatch, MessageIsClaimed
from zq.moves import Move
from zq.storage.cursors import NotificationCursors


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to post, validated and with defaults applied."""

    body: str  # JSON text, stored verbatim
    ttl: int  # seconds
    delay: int  # seconds before it can be claimed
    fingerprint: str  # zq.events.fingerprint(body), recorded in events
    # The posted event carries the body as stored (zq.events.BODY): the
    # queue has subscribers (zq.subscribed), whose notifier needs it.
    event_body: bool = False
    # The id to store it under, drawn from the same driver's
    # MessageController.new_id before the post (a sealed body is bound to
    # its id, zq.encryption); None: the driver draws one.
    id: str | None = None


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """A stored message as a driver returns it.

    ``history`` holds the raw entries appended by each move, oldest first:
    ``{"queue": source, "reason": str, "time": float}`` plus
    ``"description"`` when the move had one (zq.moves.Move.history_entry).
    zq.history.compact_history turns them into what clients see.
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


def random_version() -> str:
    """A metadata version no queue ever had (drivers that draw them at random)."""
    return uuid.uuid4().hex


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


def check_delete(message_id: str, claim_id: str | None, holder: str | None) -> None:
    """The delete rule of one alive message, the same on every driver.

    ``holder`` is the id of the live claim holding the message (None when
    free). Without a claim id a held message is refused (MessageIsClaimed);
    with one, the message must be held by exactly that claim
    (ClaimMismatch). Returning means: delete it. The Redis driver runs the
    same three-way comparison inside delete.lua (one round trip, atomic)
    and maps its answer onto these errors; the contract suite pins all three.
    """
    if claim_id is None:
        if holder is not None:
            raise MessageIsClaimed.of(message_id)
    elif holder != claim_id:
        raise ClaimMismatch.of(claim_id, message_id)


def check_move(message_id: str, claim_id: str | None, holder: str | None) -> bool:
    """Whether ``MessageController.move`` moves one alive message, the same on every driver.

    ``holder`` is the id of the live claim holding the message (None when
    free). Without ``claim_id`` a held message stays where it is (False):
    a move never takes a message from a live claim. With ``claim_id`` the
    message must be held by exactly that claim, else ClaimMismatch.
    """
    if claim_id is None:
        return holder is None
    if holder != claim_id:
        raise ClaimMismatch.of(claim_id, message_id)
    return True


def check_destination(queue: str, move: Move) -> None:
    """Refuse a move into the queue the messages are in (a caller's mistake)."""
    if move.to == queue:
        raise ValueError(f"a move cannot go from queue {queue!r} to itself")


class QueueController(ABC):
    """Queues and their metadata.

    Metadata changes are compare-and-set, so that read-modify-write cycles
    (a PATCH) and checks across queues (the dead letter chain) never act on
    what another writer changed meanwhile:

    - ``set_metadata(expected_version=v)`` writes only while the queue's
      metadata version (``read_metadata``) is still ``v``.
    - A project's *links version* (``links_version``) stands for the links
      between its queues (which queue dead letters into which). A write
      given ``links_version=l`` happens only while it is still ``l``, and
      moves it in the same atomic step. A writer reads it before it checks
      the links and passes it with the write that changes one, so of two
      writers that checked the links against the same version, one fails.

    A write refused for a moved version raises MetadataChanged and changes
    nothing; the caller reads again and decides again.
    """

    @abstractmethod
    def create(
        self,
        project: str,
        queue: str,
        metadata: dict[str, Any],
        *,
        links_version: str | None = None,
    ) -> bool:
        """Create the queue with ``metadata``; False (and no change) if it exists.

        With ``links_version``: MetadataChanged, nothing created, when the
        project's links version moved; it moves when the queue is created.
        """

    @abstractmethod
    def exists(self, project: str, queue: str) -> bool:
        """Whether the queue exists."""

    @abstractmethod
    def get_metadata(self, project: str, queue: str) -> dict[str, Any]:
        """The stored metadata; raises QueueNotFound."""

    @abstractmethod
    def read_metadata(self, project: str, queue: str) -> MetadataRead:
        """The stored metadata (``{}`` when the queue is missing) with its version.

        A driver with ``Storage.versioned`` checks the version in its
        deliveries too (VersionedDeliveries).
        """

    @abstractmethod
    def set_metadata(
        self,
        project: str,
        queue: str,
        metadata: dict[str, Any],
        *,
        expected_version: str | None = None,
        links_version: str | None = None,
    ) -> None:
        """Replace the whole metadata; raises QueueNotFound.

        MetadataChanged, nothing written, when ``expected_version`` is given
        and is no longer the queue's metadata version, or ``links_version``
        is given and is no longer the project's links version (which the
        write then moves).
        """

    @abstractmethod
    def links_version(self, project: str) -> str:
        """The project's links version (see the class documentation)."""

    @abstractmethod
    def delete(self, project: str, queue: str) -> None:
        """Remove the queue with its messages and claims; no error if absent.

        Records one ``purged`` event (``detail={"messages": n, "queue_deleted":
        True}``) when it removed any message.
        """

    @abstractmethod
    def list(
        self,
        project: str,
        *,
        marker: str | None = None,
        limit: int = 10,
        name: str | None = None,
    ) -> list[QueueRecord]:
        """Queues ordered by name, strictly after ``marker``, at most ``limit``.

        ``name``, when given, keeps only queues whose name contains it.
        """

    @abstractmethod
    def count(self, project: str, *, name: str | None = None) -> int:
        """How many queues ``list`` would return without paging."""

    def list_matching(
        self,
        project: str,
        *,
        marker: str | None = None,
        limit: int = 10,
        name: str | None = None,
        metadata: Mapping[str, Any],
    ) -> list[QueueRecord]:
        """As ``list``, keeping only queues whose metadata matches ``metadata``.

        A queue matches when its metadata holds every key of ``metadata``
        with an equal value (zq.queue_filter.same_value). Pages exactly as
        ``list``: ``limit`` matching queues after ``marker``, by name. A
        driver may override it with a query of its own backend.
        """
        return queue_filter.matching_page(
            lambda after, size: self.list(project, marker=after, limit=size, name=name),
            marker=marker, limit=limit, wanted=metadata,
        )

    def count_matching(
        self, project: str, *, name: str | None = None, metadata: Mapping[str, Any]
    ) -> int:
        """How many queues ``list_matching`` would return without paging."""
        return queue_filter.count_matching(
            lambda after, size: self.list(project, marker=after, limit=size, name=name),
            metadata,
        )

    @abstractmethod
    def stats(self, project: str, queue: str) -> QueueStats:
        """Counts of alive messages; zeros for a missing queue.

        ``oldest`` and ``newest`` are by marker and present when total > 0.
        """

    @abstractmethod
    def volume(self) -> QueueStats:
        """Counts of alive messages over every queue of every project of the backend.

        ``free`` and ``claimed`` as in ``stats``; no ``oldest``/``newest``.
        Read-only (health reports it as ``message_volume``).
        """

    @abstractmethod
    def purge(self, project: str, queue: str) -> None:
        """Remove every message and claim of the queue, keep the queue.

        Records one ``purged`` event (``detail={"messages": n}``) when it
        removed any message.
        """


class MessageController(ABC):
    """Posting, reading and deleting messages."""

    def new_id(self) -> str:
        """A message id no message of this backend has, in the driver's form."""
        return uuid.uuid4().hex

    @abstractmethod
    def post(
        self,
        project: str,
        queue: str,
        messages: Sequence[NewMessage],
        *,
        client_id: str | None,
    ) -> list[str]:
        """Store the messages in order, creating the queue if needed.

        Returns their ids in the same order: ``NewMessage.id`` where given,
        else a new one (``new_id``), unique across the backend. Records a
        ``posted`` event per message with ``detail={"ttl", "delay",
        "fingerprint", "size"}`` (size: bytes of the body text).
        """

    @abstractmethod
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
        """Alive messages in queue order, with ``marker`` greater than ``marker``.

        Without ``echo``, messages posted by ``client_id`` are left out.
        Without ``include_claimed``, messages held by a live claim are left
        out; without ``include_delayed``, delayed ones are.
        """

    @abstractmethod
    def get(self, project: str, queue: str, message_id: str) -> MessageRecord:
        """One alive message; raises MessageNotFound."""

    @abstractmethod
    def get_many(
        self, project: str, queue: str, message_ids: Sequence[str]
    ) -> list[MessageRecord]:
        """The alive ones among ``message_ids``, in queue order; unknown ids skipped."""

    @abstractmethod
    def delete(
        self,
        project: str,
        queue: str,
        message_id: str,
        *,
        claim_id: str | None,
        client_id: str | None,
        settle_claim: bool = False,
    ) -> None:
        """Delete one message.

        - missing or expired message: nothing happens, no error;
        - held by a live claim and ``claim_id`` is None: MessageIsClaimed;
        - ``claim_id`` given but the message is not held by that live claim
          (free, expired claim, or another claim): ClaimMismatch;
        - otherwise deleted, with a ``deleted`` event (claim id, client id,
          claim count).

        With ``settle_claim`` (and a ``claim_id``), the consumer log's record
        of ``claim_id`` is settled at the delete's time (ConsumerLog.settle,
        not ended) in the same atomic step, at least when the delete is not
        refused (zq.consumers writes the settle of a refused one itself).
        """

    @abstractmethod
    def delete_many(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        *,
        claim_ids: Sequence[str] | None = None,
        client_id: str | None,
    ) -> list[str]:
        """Delete several messages; returns the ids actually deleted.

        Without ``claim_ids`` every alive listed message is deleted, claimed
        or not (Zaqar's behaviour). With ``claim_ids``, only listed messages
        held by one of those live claims are deleted; others stay untouched.
        A ``deleted`` event per deleted message.
        """

    @abstractmethod
    def pop(
        self,
        project: str,
        queue: str,
        *,
        limit: int,
        client_id: str | None,
        dead_letter: DeadLetterPolicy | None,
    ) -> list[MessageRecord]:
        """Take and delete up to ``limit`` free messages in queue order.

        Pop is a delivery: it follows exactly the candidate rules of
        ``ClaimController.create`` (exhausted messages are dead lettered and
        skipped, the batch is still filled), counts one more claim on each
        returned message (the returned records show the new count), and
        records a ``deleted`` event with ``detail={"pop": True}`` for each.
        """


    @abstractmethod
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
    ) -> None:
        """A retry reject: the holder of live claim ``claim_id`` gives the message back.

        - missing or expired message: MessageNotFound;
        - not held by that live claim (free, another claim, an expired
          claim): ClaimMismatch (check_move's rule), nothing changes;
        - otherwise, in one atomic step, the message leaves the claim (the
          claim keeps its other messages) with its claim count unchanged,
          and is claimable again ``retry_after`` seconds from now, or, when
          None, once the backoff its claim gave it has passed from now (as
          a release does; at once without one). A ``rejected`` event (claim
          id, client id, claim count, ``events.rejected_detail(description,
          retry_after)``).

        A terminal reject is a ``move`` (zq.moves.rejected) with the claim id.
        """

    @abstractmethod
    def move(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        move: Move,
        *,
        claim_id: str | None = None,
        client_id: str | None,
    ) -> list[str]:
        """Move messages to queue ``move.to`` of this backend in ONE atomic step.

        The primitive of every poison feature (terminal reject, redrive;
        a claim's dead letter move and expiry dead lettering run the same
        step inside their own). ``move`` (zq.moves) says what each moved
        message becomes; the driver carries it out exactly as zq.moves'
        docstring lists: same id, body, marker, client id and fingerprint;
        in ``move.to`` (created if missing, in the same step), free (no
        claim, no delay); ttl ``move.ttl`` or its own, created now,
        expires now + ttl; ``move.history_entry(queue, now)`` appended;
        claim_count 0 when ``move.reset_claim_count``, else kept;
        redrive_count + 1 when ``move.count_redrive``; and one
        ``move.event`` event on ``queue`` per moved message (claim count
        before the move, ``claim_id``, ``client_id``,
        ``move.event_detail(fingerprint, body)``), in the same step.

        Which listed messages move (check_move): alive ones in ``queue``;
        unknown, expired or other queues' ids are skipped. Without
        ``claim_id``, messages held by a live claim are skipped. With
        ``claim_id`` (a reject by the claim's holder), every listed alive
        message must be held by that live claim: otherwise ClaimMismatch
        and nothing moves. Returns the ids moved, in queue order; after
        it each message is in exactly one queue, whatever crashes when.
        ``move.to == queue`` is a ValueError (check_destination).
        """


class ClaimController(ABC):
    """Claims: leases on batches of messages."""

    @abstractmethod
    def create(
        self,
        project: str,
        queue: str,
        *,
        ttl: int,
        grace: int,
        limit: int,
        client_id: str | None,
        dead_letter: DeadLetterPolicy | None,
        backoff: BackoffPolicy | None = None,
        consumer: ConsumerEntry | None = None,
    ) -> ClaimRecord | None:
        """Claim up to ``limit`` free messages in queue order, atomically.

        One atomic step (transaction / script) that walks free candidates in
        queue order. A candidate that ``dead_letter.is_exhausted`` (only when
        a policy is given) is not delivered: it is moved as
        ``MessageController.move`` moves it, with ``dead_letter.move``, its
        event recorded with the claimer's client id and no claim id; the
        walk then goes on so the batch still holds up to ``limit``
        deliverable messages.

        Each delivered message: claim_count + 1, held by the new claim until
        now + ttl, and its own expiry raised to at least now + ttl + grace. A
        ``claimed`` event per message (new claim count). With ``backoff``,
        each delivered message is claimable again no sooner than the claim's
        expiry plus ``backoff.delay_for(new claim count)`` (drawn once per
        message, kept by renew and release, see the module documentation).

        Returns None (after committing any dead letter moves) when no
        message was delivered. Two concurrent calls never deliver the same
        message. ``metadata_version`` as for ``MessageController.post``.

        With ``consumer``, a claim that delivered also writes
        ``consumer.record(claim id, ttl, now)`` into the consumer log and
        forgets the queue's records that expired before
        ``consumer.forget_before(now)``, as ``ConsumerLog.record`` does, in
        the same atomic step.
        """

    @abstractmethod
    def get(self, project: str, queue: str, claim_id: str) -> ClaimRecord:
        """A live claim with its messages; raises ClaimNotFound."""

    @abstractmethod
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
        """Extend a live claim to now + ttl; raises ClaimNotFound.

        Its messages stay held until the new expiry and live at least until
        now + ttl + grace, and keep the backoff their claim gave them after
        it (claimable again at the new expiry plus that backoff). Claim
        counts do not change. A ``renewed`` event per held message.
        """

    @abstractmethod
    def release(
        self, project: str, queue: str, claim_id: str, *, client_id: str | None
    ) -> None:
        """End a claim: its messages become free, counts unchanged.

        A message to which the claim gave a backoff becomes claimable again
        only that backoff after now (delayed meanwhile).

        No error when the claim does not exist or has expired. A ``released``
        event per message it still held.
        """


class VersionedDeliveries(ABC):
    """A capability of some drivers: deliveries that check a metadata version.

    The service reads a queue's metadata (its defaults, its dead letter
    policy) before it posts, claims or pops. A driver offering this
    capability (``Storage.versioned``) takes the version that read returned
    (``QueueController.read_metadata``) and checks it in the same atomic
    step as the delivery: each method acts exactly as its plain
    counterpart, or raises MetadataChanged and changes nothing when the
    queue's metadata version is no longer ``metadata_version``. The service
    can then keep metadata cached indefinitely (zq.metadata_cache).
    """

    @abstractmethod
    def post(
        self,
        project: str,
        queue: str,
        messages: Sequence[NewMessage],
        *,
        client_id: str | None,
        metadata_version: str,
    ) -> list[str]:
        """``MessageController.post``, at ``metadata_version``."""

    @abstractmethod
    def pop(
        self,
        project: str,
        queue: str,
        *,
        limit: int,
        client_id: str | None,
        dead_letter: DeadLetterPolicy | None,
        metadata_version: str,
    ) -> list[MessageRecord]:
        """``MessageController.pop``, at ``metadata_version``."""

    @abstractmethod
    def claim(
        self,
        project: str,
        queue: str,
        *,
        ttl: int,
        grace: int,
        limit: int,
        client_id: str | None,
        dead_letter: DeadLetterPolicy | None,
        metadata_version: str,
        backoff: BackoffPolicy | None = None,
        consumer: ConsumerEntry | None = None,
    ) -> ClaimRecord | None:
        """``ClaimController.create``, at ``metadata_version``."""


class EventLog(ABC):
    """The backend's append-only log of events, read by the exporter.

    ``final_order`` says whether a cursor, once read past, is final: True
    when ``read`` never returns an event before which a transaction still in
    flight could later commit one (its writers are serialized, its cursor is
    assigned inside the atomic step, or ``read`` stops below the oldest
    transaction in flight). False when cursors are assigned at write time
    and commits may land out of cursor order: a reader must then leave
    recent events for a settle window (see zq.analytics.export).
    """

    final_order: bool = True

    @abstractmethod
    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        """Events in log order strictly after cursor ``after`` (all if None)."""

    @abstractmethod
    def count(self, *, after: str | None = None) -> int:
        """How many committed events come after cursor ``after``.

        Counts the events ``read`` does not return yet too (on a log that
        stops below a transaction in flight): the exporter reports them as
        held back.
        """

    @abstractmethod
    def trim(self, *, up_to: str) -> int:
        """Remove events up to and including cursor ``up_to``; returns how many."""

    @abstractmethod
    def end(self) -> str | None:
        """The cursor of the last event ``read`` could return now (None: there is none).

        A read after it returns what is new since the call (and what
        transactions in flight at the call commit) without reading the log
        before it: where a new subscription's notifications start. On a log
        without ``final_order`` an event numbered before the call but
        committed after it falls behind (its write began before the call).
        """

    def sort_key(self, cursor: str) -> tuple[int, ...]:
        """A key that orders cursors as ``read`` returns them (integer cursors here).

        The notifier and the exporter's trim compare cursors with it
        (zq.notifications.retention).
        """
        return (int(cursor),)


class Storage(ABC):
    """One backend: the controllers plus backend-wide housekeeping."""

    queues: QueueController
    messages: MessageController
    claims: ClaimController
    events: EventLog
    consumers: ConsumerLog
    # The driver's VersionedDeliveries, when it has the capability.
    versioned: VersionedDeliveries | None = None
    # The notifier's cursors and leases (zq.storage.cursors), when the driver has them.
    notification_cursors: NotificationCursors | None = None
    subscriptions: SubscriptionController

    @abstractmethod
    def ping(self) -> bool:
        """Whether the backend answers; never raises."""

    @abstractmethod
    def gc(self) -> Collected:
        """Remove expired messages, claims and subscriptions; returns how many of each went.

        Expired subscriptions are removed without an event
        (``Collected.subscriptions``).

        An expired message of a queue whose stored metadata asks for it
        (zq.dead_letter.expiry_move_from_metadata, ``_dead_letter_expired``)
        is moved instead, with that move (``Collected.moved``), exactly as
        ``MessageController.move`` moves, client id None. A claim or pop on
        such a queue that is given the policy (``DeadLetterPolicy.expired``)
        moves its expired messages first, in its own atomic step; the Redis
        driver moves them whenever it settles the queue.

        Records an ``expired`` event per removed message (its claim count),
        and one ``expired`` event per removed claim that still held messages
        (``message_id`` None, claim id and the claimer's client id,
        ``detail={"target": "claim", "messages": n}``). Safe to run from
        several processes at once: no event is recorded twice.
        """

    @abstractmethod
    def close(self) -> None:
        """Release connections."""


# -- subscriptions (Zaqar v2's notifications) --------------------------------


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


def new_subscription_id() -> str:
    """A subscription id: unique across backends, and checkable by its shape."""
    return str(uuid.uuid4())


def subscriber_key(subscriber: str) -> str:
    """The fixed-length key drivers index a subscriber by (URLs have any length)."""
    return hashlib.sha256(subscriber.encode()).hexdigest()


def subscription_age(created: float, now: float) -> int:
    """``SubscriptionRecord.age``: whole seconds since creation, never negative."""
    return max(0, int(now - created))


class SubscriptionController(ABC):
    """Subscriptions of queues to subscribers (webhooks, mail addresses).

    A subscription is *live* while ``now < expires``; an expired one is
    invisible to every read and write at once (as if deleted), before
    ``Storage.gc`` removes it. Subscriptions do not depend on their queue
    existing (as in Zaqar, deleting a queue keeps its subscriptions), and
    are unique by (project, queue, subscriber) among live ones. Ids are
    ``new_subscription_id()`` values; ``list`` pages in id order.
    """

    @abstractmethod
    def create(
        self,
        project: str,
        queue: str,
        subscriber: str,
        ttl: int,
        options: dict[str, Any],
        *,
        subscription_id: str | None = None,
    ) -> str | None:
        """Store a new, unconfirmed subscription expiring at now + ttl; its id.

        None, and nothing changes, when a live subscription of the same
        subscriber to the queue exists (Zaqar's storage answer; see
        ``find``). An expired one of the same subscriber is replaced, in
        the same atomic step. ``subscription_id``: the id to give it (a
        ``new_subscription_id()``), so that a caller can store what hangs on
        the id before the subscription is visible; made here when None.
        """

    @abstractmethod
    def get(self, project: str, queue: str, subscription_id: str) -> SubscriptionRecord:
        """One live subscription of the queue; raises SubscriptionNotFound."""

    @abstractmethod
    def find(self, project: str, queue: str, subscriber: str) -> SubscriptionRecord | None:
        """The live subscription of ``subscriber`` to the queue, if any."""

    @abstractmethod
    def exists(self, project: str, queue: str, subscription_id: str) -> bool:
        """Whether ``get`` would find it."""

    @abstractmethod
    def list(
        self,
        project: str,
        queue: str,
        *,
        marker: str | None = None,
        limit: int = 10,
    ) -> list[SubscriptionRecord]:
        """Live subscriptions of the queue by id, strictly after ``marker``, at most ``limit``."""

    @abstractmethod
    def update(
        self,
        project: str,
        queue: str,
        subscription_id: str,
        *,
        subscriber: str | None = None,
        ttl: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Change the given fields of a live subscription (None: keep).

        A new ``ttl`` makes it expire at now + ttl; ``options`` replaces the
        whole options object. SubscriptionNotFound when it is not live;
        SubscriptionConflict, nothing changed, when ``subscriber`` is that
        of another live subscription to the queue.
        """

    @abstractmethod
    def delete(self, project: str, queue: str, subscription_id: str) -> None:
        """Remove the subscription; no error when it does not exist."""

    @abstractmethod
    def confirm(
        self, project: str, queue: str, subscription_id: str, *, confirmed: bool
    ) -> None:
        """Set whether the subscriber confirmed it; raises SubscriptionNotFound."""

    @abstractmethod
    def for_queue(self, project: str, queue: str) -> list[SubscriptionRecord]:
        """Every live subscription of the queue (for delivery), by id."""

    @abstractmethod
    def live(self) -> list[SubscriptionRecord]:
        """Every live subscription of the backend, across projects (for delivery)."""


# -- consumers (GET /v2/queues/{q}/consumers, _suspect_lapsed_consumers) ------


@dataclass(frozen=True, slots=True)
class ConsumerClaim:
    """One claim as the consumer log remembers it (zq.consumers reads these).

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

    zq.consumers fills it in; a driver only carries its values into the
    claim's transaction or script, with the claim's id and time.
    """

    client_id: str
    # Records that expired more than this many seconds before the claim
    # are read by no rule (zq.consumers.forget_before).
    keep_for: float

    def record(self, claim_id: str, ttl: int, now: float) -> ConsumerClaim:
        return ConsumerClaim(client_id=self.client_id, claim_id=claim_id, ttl=ttl,
                             claimed=now, expires=now + ttl)

    def forget_before(self, now: float) -> float:
        return now - self.keep_for


class ConsumerLog(ABC):
    """Who claims from a queue, and which of their claims lapsed.

    An advisory record beside the claims themselves. A new claim's record
    is written by the claim's own atomic step (ClaimController.create with
    ``consumer``), a claim's first delete settles it in the delete's own
    step (MessageController.delete with ``settle_claim``); the other
    settles, renewals and forgets are written by the service just before
    or after the operation they describe (zq.consumers), so a crash in
    between loses one settle, never a message. Every write is idempotent.
    Times are given by the caller (the service reads the driver's clock).
    """

    @abstractmethod
    def record(self, project: str, queue: str, claim: ConsumerClaim, *,
               forget_before: float) -> None:
        """Remember a new claim; forget the queue's records whose
        ``expires`` is before ``forget_before``, in the same step."""

    @abstractmethod
    def settle(self, project: str, queue: str, claim_id: str, *, now: float,
               ended: bool) -> None:
        """Set ``settled`` to ``now`` unless already set; with ``ended`` (a
        release) also lower ``expires`` to ``now`` when it is later. An
        unknown claim id changes nothing."""

    @abstractmethod
    def extend(self, project: str, queue: str, claim_id: str, *, ttl: int,
               now: float) -> None:
        """A renew: a claim still live at ``now`` gets ``expires = now + ttl``
        and ``ttl``; one that had expired is settled instead (a late renew
        shows its holder is alive). An unknown claim id changes nothing."""

    @abstractmethod
    def forget(self, project: str, queue: str) -> None:
        """Drop every record of the queue (it was deleted)."""

    @abstractmethod
    def claims(self, project: str, queue: str, *, expires_after: float,
               client_id: str | None = None) -> list[ConsumerClaim]:
        """The queue's records with ``expires >= expires_after`` (only
        ``client_id``'s when given), in no particular order."""
