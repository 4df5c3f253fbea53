"""The storage contract: what every driver (SQL, Redis, MongoDB) implements.

The contract test suite (tests/contract/) checks every driver against it.
Rules all drivers share live above this layer; a driver receives
already-validated values and does only what is specific to its backend.
The breaker's part is zq.storage.breakers.

Conventions every driver follows:

- Every operation is scoped by ``project`` (the tenant) and ``queue``.
- Times are POSIX seconds as floats, from the driver's ``Clock``.
- A message is *alive* while ``now < expires``; an expired message is
  invisible to every read and write at once, before garbage collection
  removes it. A claim is *live* while ``now < claim expires``; a message
  held by an expired claim is free again.
- A message is *free* when it is alive, not held by a live claim, and not
  delayed (``now >= delay_until``). ``delay_until`` is the one moment a
  message becomes claimable again: a post's delay sets it, and so does the
  backoff between deliveries (zq.poison.backoff): a claim made with a backoff
  policy sets it to the claim's expiry plus the message's backoff, so a
  claim that expires implies the backoff with no write at that moment;
  renewing the claim moves it with the claim's expiry, releasing the claim
  (or a retry reject) makes it now plus the same backoff. A message that
  is alive, unheld and not yet claimable is *delayed*.
- Queue order is the order of posting, per queue (``MessageRecord.marker``
  increases). A message moved into another queue (``MessageController.move``,
  a claim's dead letter move) keeps its marker.
- Every state change writes its event(s) (see zq.events) in the same atomic
  step as the change itself; MongoDB without transactions (standalone,
  mongomock) writes them right after it (docs/mongo.md).
- Message bodies are opaque JSON text, stored and returned exactly.
- Queues are created implicitly by posting to them and by a move into them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from zq import queue_filter
from zq.poison.moves import Move
from zq.storage.breakers import BreakerLog
from zq.storage.checks import check_destination
from zq.storage.consumer_log import ConsumerLog
from zq.storage.cursors import NotificationCursors
from zq.storage.delivery_rules import NO_RULES, DeliveryRules
from zq.storage.records import (
    ClaimRecord,
    Collected,
    Event,
    MessageRecord,
    MetadataRead,
    NewMessage,
    QueueRecord,
    QueueStats,
    random_id,
)
from zq.storage.subscriptions import SubscriptionController
from zq.storage.wakeups import Wakeups


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

        A driver with ``Storage.checks_metadata_version`` checks the version
        in its posts and deliveries too.
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
        """Remove the queue with its messages, claims and breaker; no error if absent.

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
        """``list`` of the queues whose metadata holds ``metadata``'s keys and
        values (zq.queue_filter.same_value); a driver may override it."""
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
        """Counts of alive messages of every queue of the backend (health's
        ``message_volume``): ``free`` and ``claimed``, no ``oldest``/``newest``."""

    @abstractmethod
    def purge(self, project: str, queue: str) -> None:
        """Remove every message and claim (and the breaker's record) of the queue, keep it.

        One ``purged`` event (``detail={"messages": n}``) when it removed any message.
        """


class MessageController(ABC):
    """Posting, reading and deleting messages."""

    def new_id(self) -> str:
        """A message id no message of this backend has, in the driver's form."""
        return random_id()

    @abstractmethod
    def post(
        self,
        project: str,
        queue: str,
        messages: Sequence[NewMessage],
        *,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> list[str]:
        """Store the messages in order, creating the queue if needed.

        Returns their ids in the same order: ``NewMessage.id`` where given,
        else a new one (``new_id``), unique across the backend. Records a
        ``posted`` event per message with ``detail={"ttl", "delay",
        "fingerprint", "size"}`` (size: bytes of the body text).

        Of ``rules`` only ``metadata_version`` (the version the service read
        the queue's defaults at) applies to a post. It is given only to a
        driver with ``Storage.checks_metadata_version``, which checks it in
        the same atomic step: MetadataChanged, nothing posted, when it moved.
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
        rules: DeliveryRules = NO_RULES,
    ) -> None:
        """Delete one message (with ``claim_id``: a success for ``rules.breaker``).

        - missing or expired message: nothing happens, no error;
        - held by a live claim and ``claim_id`` is None: MessageIsClaimed;
        - ``claim_id`` given but the message is not held by that live claim
          (free, expired claim, or another claim): ClaimMismatch;
        - otherwise deleted, with a ``deleted`` event (claim id, client id, claim count).

        With ``settle_claim`` (and a ``claim_id``), the consumer log's record of
        ``claim_id`` is settled at the delete's time (ConsumerLog.settle, not
        ended) in the same atomic step, at least when the delete is not refused.
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
        settle_claims: bool = False,
        rules: DeliveryRules = NO_RULES,
    ) -> list[str]:
        """Delete several messages; returns the ids actually deleted.

        Without ``claim_ids`` every alive listed message is deleted, claimed
        or not (Zaqar's behaviour). With ``claim_ids``, only listed messages
        held by one of those live claims are deleted (each a success for
        ``rules.breaker``); others stay untouched. A ``deleted`` event per
        deleted message. With ``settle_claims`` the consumer log's record of
        each of ``claim_ids`` is settled as by ``delete``'s ``settle_claim``.
        """

    @abstractmethod
    def pop(
        self,
        project: str,
        queue: str,
        *,
        limit: int,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> list[MessageRecord]:
        """Take and delete up to ``limit`` free messages in queue order.

        Pop is a delivery: it follows exactly the candidate rules of
        ``ClaimController.create`` (exhausted messages are dead lettered and
        skipped, the batch is still filled; ``rules.dead_letter`` and
        ``rules.metadata_version`` as there; a pop has no claim, so no
        backoff and no consumer record), counts one more claim on each
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
        rules: DeliveryRules = NO_RULES,
    ) -> None:
        """A retry reject: the holder of live claim ``claim_id`` gives the message back.

        A failure for ``rules.breaker`` (zq.storage.breakers).
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

        A terminal reject is a ``move`` (zq.poison.moves.rejected) with the claim id.
        """

    def move(
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
        """Move messages to queue ``move.to`` of this backend in ONE atomic step.

        With ``claim_id`` and ``rules.breaker`` a terminal reject is a
        failure, held as a retry reject while the breaker is open (its id
        returned as if moved; zq.storage.breakers).
        The primitive of every poison feature (terminal reject, redrive;
        a claim's dead letter move and expiry dead lettering run the same
        step inside their own). ``move`` (zq.poison.moves) says what each moved
        message becomes; the driver carries it out exactly as zq.poison.moves'
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
        check_destination(queue, move)
        if not message_ids:
            return []
        return self._move(project, queue, message_ids, move, claim_id=claim_id,
                          client_id=client_id, rules=rules)

    @abstractmethod
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
        """The driver's atomic step of ``move``, given a checked destination and ids."""


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
        rules: DeliveryRules = NO_RULES,
    ) -> ClaimRecord | None:
        """Claim up to ``limit`` free messages in queue order, atomically.

        One atomic step (transaction / script) that walks free candidates in
        queue order. A candidate that ``rules.dead_letter.is_exhausted``
        (only when a policy is given) is not delivered: it is moved as
        ``MessageController.move`` moves it, with ``dead_letter.move``, its
        event recorded with the claimer's client id and no claim id; the
        walk then goes on so the batch still holds up to ``limit``
        deliverable messages.

        Each delivered message: claim_count + 1, held by the new claim until
        now + ttl, and its own expiry raised to at least now + ttl + grace. A
        ``claimed`` event per message (new claim count). With ``rules.backoff``,
        each delivered message is claimable again no sooner than the claim's
        expiry plus ``backoff.delay_for(new claim count)`` (drawn once per
        message, kept by renew and release, see the module documentation).

        None (after committing any dead letter moves) when none was delivered;
        two concurrent calls never deliver the same message.
        ``rules.metadata_version`` as for ``MessageController.post``.

        With ``rules.consumer``, a claim that delivered also writes
        ``consumer.record(claim id, ttl, now)`` into the consumer log and
        forgets the queue's records that expired before
        ``consumer.forget_before(now)``, as ``ConsumerLog.record`` does, in
        the same step. ``rules.breaker`` (zq.storage.breakers) and
        ``blame_split`` (zq.poison.blame): claims and pops alike.
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


class EventLog(ABC):
    """The backend's append-only log of events, read by the exporter.

    ``final_order``: True when ``read`` never returns an event before which
    a transaction in flight could later commit one (serialized writers, a
    cursor assigned inside the atomic step, or a read that stops below the
    oldest transaction in flight). False: commits may land out of cursor
    order, and a reader leaves a settle window (zq.analytics.export).
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
        transactions in flight at the call commit): where a new subscription's
        notifications start. On a log without ``final_order`` an event
        numbered before the call but committed after it falls behind.
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
    checks_metadata_version: bool = False  # capability: DeliveryRules.metadata_version
    # A capability: the driver carries out ``DeliveryRules.breaker`` and
    # ``blame_split`` and has ``breakers`` (zq.storage.breakers).
    has_breaker: bool = False
    breakers: BreakerLog
    notification_cursors: NotificationCursors  # the notifier's (zq.storage.cursors)
    subscriptions: SubscriptionController
    wakeups: Wakeups  # waiting claims (zq.storage.wakeups)

    @abstractmethod
    def ping(self) -> bool:
        """Whether the backend answers; never raises."""

    @abstractmethod
    def gc(self) -> Collected:
        """Remove expired messages, claims and subscriptions; returns how many of each went.

        Expired subscriptions are removed without an event
        (``Collected.subscriptions``).

        An expired message of a queue whose stored metadata asks for it
        (zq.poison.dead_letter.expiry_move_from_metadata, ``_dead_letter_expired``)
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
