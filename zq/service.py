"""The service rules: one method per use case of the API.

Between HTTP and storage: checks names and values (zq.validation), applies
defaults from queue metadata and configuration (zq.metadata), encodes
message bodies to canonical JSON, seals them for queues that encrypt and
opens sealed ones on every read that returns them (zq.encryption), builds
the dead letter policy and validates dead letter settings
(zq.poison.dead_letter). It reaches storage only through a zq.pooling resolver
and knows nothing about HTTP.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from zq import events, subscriptions, validation
from zq import metadata as meta
from zq.clock import Clock, SystemClock
from zq.config import Limits
from zq.encryption import BodyCipher, is_sealed, open_body
from zq.errors import (
    ClaimMismatch,
    ClaimNotFound,
    Conflict,
    DeadLetterConflict,
    EncryptionFailure,
    EncryptionNotConfigured,
    InvalidRequest,
    MessageIsClaimed,
    MessageNotFound,
    MetadataChanged,
    MetadataConflict,
    QueueNotFound,
)
from zq.metadata_cache import MetadataCache
from zq.opening import Opened, OpenedClaim, Unreadable, open_each, opened_claim
from zq.poison import backoff, consumers, dead_letter, dead_letter_chain, moves, redrive
from zq.pooling import Pools
from zq.pooling.base import PoolDown
from zq.storage.base import Storage
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import ClaimRecord, MessageRecord, NewMessage, QueueRecord, QueueStats
from zq.subscribed import SubscribedQueues

# A project and queue name no client can use (names cannot contain ":"),
# read by the health probe so that it never touches real data.
HEALTH_PROJECT = "zq:health"
HEALTH_QUEUE = "zq-health-probe"

# Reads of a queue's metadata a post, claim or pop makes at most when the
# metadata keeps changing under it (see QueueService._with_metadata).
METADATA_ATTEMPTS = 3

# Times a PUT or PATCH reads, decides and writes metadata at most while
# other writers keep changing it (or the project's dead letter links)
# under it, before it answers 409 (see QueueService._write_metadata).
METADATA_WRITE_ATTEMPTS = 8

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class QueuePage:
    """One page of a queue listing."""

    queues: list[QueueRecord]
    count: int | None  # total matching queues, when asked for


def encode_body(body: Any) -> str:
    """A message body as canonical JSON text (sorted keys), the form stored."""
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()


def _sealed_post_size(cipher: BodyCipher, bodies: list[str], body_size: int) -> int:
    """The size of a post of ``body_size`` bytes once its ``bodies`` are sealed.

    Each body counts as its canonical JSON text in the post as sent, and as
    its sealed text (a JSON string: two quotes more) once encrypted.
    """
    grown = sum(cipher.sealed_length(body) + 2 - len(body.encode()) for body in bodies)
    return body_size + grown


class QueueService:
    """Every operation the API offers, scoped by project and queue."""

    def __init__(self, limits: Limits, pools: Pools, *,
                 metadata_cache: MetadataCache | None = None,
                 cipher: BodyCipher | None = None, clock: Clock | None = None,
                 subscribed: SubscribedQueues | None = None) -> None:
        self.limits = limits
        self.pools = pools
        # The consumer log's times (zq.poison.consumers); the drivers keep their own.
        self.clock = clock or SystemClock()
        self._consumers = consumers.ConsumerRule(limits.max_claim_ttl)
        self._metadata_cache = metadata_cache or MetadataCache(0)
        self._cipher = cipher  # None: no [encryption] keys configured
        # Shared with this process's SubscriptionService, which forgets a
        # queue whose subscriptions it changes.
        self.subscribed = subscribed or SubscribedQueues(self.clock)

    # -- queues ---------------------------------------------------------

    def create_queue(self, project: str, queue: str, metadata: Any | None) -> bool:
        """Create a queue with optional metadata; False when it already existed."""
        queue = self._queue_name(queue)
        checked = meta.validate({} if metadata is None else metadata, self.limits)
        self._check_encryption(checked, {})
        if self._storage(project, queue).queues.exists(project, queue):
            return False
        flavor = checked.get(meta.FLAVOR)
        if flavor is not None:
            self.pools.check_flavor(flavor)
        target = checked.get(meta.DEAD_LETTER_QUEUE)
        # Refused before the queue is registered anywhere; checked again
        # against the links version when written.
        self._check_dead_letter_chain(project, queue, target)
        self._metadata_cache.forget(project, queue)
        storage = self.pools.place(project, queue, flavor=flavor, dead_letter_queue=target)

        def create() -> bool:
            links = self._checked_links(storage, project, queue, target)
            return storage.queues.create(project, queue, checked, links_version=links)

        created = self._write_metadata(queue, create)
        self._create_dead_letter_queue(storage, project, target)
        return created

    def queue_metadata(self, project: str, queue: str) -> dict[str, Any]:
        """The metadata with reserved defaults; a never-created queue shows only those."""
        queue = self._queue_name(queue)
        return meta.with_defaults(self._stored_metadata(project, queue), self.limits)

    def patch_metadata(
        self, project: str, queue: str, document: Any
    ) -> dict[str, Any]:
        """Apply a JSON-patch document to an existing queue's metadata.

        Returns the new metadata with reserved defaults. Raises QueueNotFound
        for a queue never created, Conflict to replace or remove an absent
        ordinary key, DeadLetterConflict for a bad dead letter queue,
        MetadataConflict when other writers kept changing the metadata.
        """
        queue = self._queue_name(queue)
        changes = validation.metadata_patch(document)
        storage = self._storage(project, queue)

        def patch() -> tuple[dict[str, Any], str | None]:
            current = storage.queues.read_metadata(project, queue)
            if not current.exists:
                raise QueueNotFound.gone(queue)
            checked = meta.validate(apply_patch(current.metadata, changes), self.limits)
            self._check_encryption(checked, current.metadata)
            flavor = checked.get(meta.FLAVOR)
            if flavor is not None and flavor != current.metadata.get(meta.FLAVOR):
                # A queue stays where it was placed; _flavor only has to exist.
                self.pools.check_flavor(flavor)
            target = checked.get(meta.DEAD_LETTER_QUEUE)
            links = None
            if target != current.metadata.get(meta.DEAD_LETTER_QUEUE):
                links = self._checked_links(storage, project, queue, target)
                self.pools.link_dead_letter(project, queue, target)
            storage.queues.set_metadata(
                project, queue, checked, expected_version=current.version, links_version=links
            )
            return checked, target

        checked, target = self._write_metadata(queue, patch)
        self._metadata_cache.forget(project, queue)
        self._create_dead_letter_queue(storage, project, target)
        return meta.with_defaults(checked, self.limits)

    def delete_queue(self, project: str, queue: str) -> None:
        """Remove a queue with its messages and claims; no error when absent."""
        queue = self._queue_name(queue)
        storage = self._storage(project, queue)
        storage.queues.delete(project, queue)
        # Who consumed from it goes with it: a new queue of the same name
        # starts with no consumers (zq.poison.consumers).
        storage.consumers.forget(project, queue)
        self.pools.forget(project, queue)
        self._metadata_cache.forget(project, queue)

    def list_queues(
        self,
        project: str,
        *,
        marker: str | None = None,
        limit: int | None = None,
        detailed: bool = False,
        name: str | None = None,
        with_count: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> QueuePage:
        """Queues ordered by name after ``marker``, across every backend.

        ``name`` keeps queues whose name contains it; ``metadata`` those whose
        metadata holds each of its keys with an equal value (zq.queue_filter).
        """
        size = validation.limit(
            self.limits.default_page_size if limit is None else limit,
            self.limits.max_queues_per_page,
        )
        marker = validation.listing_name(marker, "marker", self.limits.max_queue_name_length)
        name = validation.listing_name(name, "name", self.limits.max_queue_name_length)
        # The resolver knows the index of queues (the catalog, under pooling).
        found = self.pools.list_queues(
            project, marker=marker, limit=size, name=name, detailed=detailed,
            metadata=metadata or None,
        )
        if detailed:
            page = [QueueRecord(q.name, meta.with_defaults(q.metadata, self.limits)) for q in found]
        else:
            page = [QueueRecord(q.name, {}) for q in found]
        count = None
        if with_count:
            count = self.pools.count_queues(project, name=name, metadata=metadata or None)
        return QueuePage(page, count)

    def queue_stats(self, project: str, queue: str) -> QueueStats:
        """Counts of alive messages (zeros for a queue never created)."""
        queue = self._queue_name(queue)
        return self._storage(project, queue).queues.stats(project, queue)

    def purge_queue(self, project: str, queue: str, document: Any | None) -> None:
        """Remove the queue's resources named by ``resource_types`` (all by default)."""
        queue = self._queue_name(queue)
        resource_types = validation.purge_document(document)
        if "messages" in resource_types:
            self._storage(project, queue).queues.purge(project, queue)
        if "subscriptions" in resource_types:
            subscriptions.purge(self._storage(project, queue), project, queue)
            self.subscribed.forget(project, queue)

    # -- messages -------------------------------------------------------

    def post_messages(
        self,
        project: str,
        queue: str,
        document: Any,
        *,
        client_id: str | None,
        body_size: int,
    ) -> list[str]:
        """Post a ``{"messages": [...]}`` document; returns the new ids in order."""
        queue = self._queue_name(queue)
        storage = self._storage(project, queue)

        def post(stored: dict[str, Any], version: str | None) -> list[str]:
            new = self._new_messages(stored, document, body_size)
            # Posting creates a queue implicitly: a new one is placed (no
            # flavor). A version read where the queue was not registered is
            # None; one read from a pool the queue has since left is refused
            # by the driver (versions are random), and the post is retried.
            placed = self.pools.place(project, queue)
            new = self._sealed(placed, project, stored, new)
            new = self._with_event_bodies(placed, project, queue, new)
            rules = DeliveryRules(metadata_version=_checked(placed, version))
            return placed.messages.post(project, queue, new, client_id=client_id, rules=rules)

        return self._with_metadata(project, queue, storage, post)

    def _with_event_bodies(self, storage: Storage, project: str, queue: str,
                           new: list[NewMessage]) -> list[NewMessage]:
        """``new``, with bodies in their posted events when the queue has subscriptions.

        The body goes into the event as stored (sealed for a queue that
        encrypts), in the post's own write: the notifier then never depends
        on the message still being in the queue. Queues without
        subscriptions pay a cached read every few seconds (zq.subscribed).
        """
        def lookup(project: str, queue: str) -> bool:
            return bool(storage.subscriptions.for_queue(project, queue))

        if not self.subscribed.has(project, queue, lookup):
            return new
        return [dataclasses.replace(message, event_body=True) for message in new]

    def _new_messages(
        self, stored: dict[str, Any], document: Any, body_size: int
    ) -> list[NewMessage]:
        """The post's messages, within the queue's post size, with its defaults applied.

        The size cap applies to the post as the client sent it and, on a queue
        that encrypts, to the post with its bodies sealed (as Zaqar does); such
        a queue fingerprints each body keyed (``_sealed`` then seals it).
        """
        cap = min(
            self.limits.max_messages_post_size,
            meta.effective(stored, meta.MAX_MESSAGES_POST_SIZE, self.limits),
        )
        validation.body_size(body_size, cap, "The message post")
        posted = validation.posted_messages(document, self.limits)
        ttl = meta.effective(stored, meta.DEFAULT_MESSAGE_TTL, self.limits)
        delay = meta.effective(stored, meta.DEFAULT_MESSAGE_DELAY, self.limits)
        cipher = self._sealing_cipher(stored)
        keyed = cipher.fingerprint if cipher is not None else events.fingerprint
        new = []
        for message in posted:
            body = encode_body(message.body)
            new.append(
                NewMessage(
                    body=body,
                    ttl=ttl if message.ttl is None else message.ttl,
                    delay=delay if message.delay is None else message.delay,
                    fingerprint=keyed(body),
                )
            )
        if cipher is not None:
            validation.body_size(
                _sealed_post_size(cipher, [m.body for m in new], body_size), cap,
                "The message post, with its bodies encrypted,",
            )
        return new

    def _sealed(self, storage: Storage, project: str, stored: dict[str, Any],
                new: list[NewMessage]) -> list[NewMessage]:
        """``new`` with sealed bodies for a queue that encrypts, each bound to its id.

        The id is drawn from the driver that stores the message, before the
        post, so that a body copied onto another message does not open.
        """
        cipher = self._sealing_cipher(stored)
        if cipher is None:
            return new
        sealed = []
        for message in new:
            message_id = storage.messages.new_id()
            sealed.append(dataclasses.replace(
                message, id=message_id, body=cipher.seal(message.body, project, message_id)))
        return sealed

    def list_messages(
        self,
        project: str,
        queue: str,
        *,
        marker: str | None = None,
        limit: int | None = None,
        echo: bool = False,
        client_id: str | None = None,
        include_claimed: bool = False,
        include_delayed: bool = False,
    ) -> Opened:
        """A page of alive messages in queue order; unreadable bodies left out (zq.opening)."""
        queue = self._queue_name(queue)
        size = validation.limit(
            self.limits.default_page_size if limit is None else limit,
            self.limits.max_messages_per_page,
        )
        return self._open(project, queue, "listing", self._storage(project, queue).messages.list(
            project,
            queue,
            marker=validation.message_marker(marker),
            limit=size,
            echo=echo,
            client_id=client_id,
            include_claimed=include_claimed,
            include_delayed=include_delayed,
        ))

    def get_message(self, project: str, queue: str, message_id: str) -> MessageRecord:
        """One alive message; raises MessageNotFound."""
        queue = self._queue_name(queue)
        if not validation.is_id_shaped(message_id):
            raise MessageNotFound("No message has this id.")
        record = self._storage(project, queue).messages.get(project, queue, message_id)
        if not is_sealed(record.body):
            return record
        # The one message asked for: one that cannot be opened is the answer's error.
        return dataclasses.replace(
            record, body=open_body(self._cipher, record.body, project, record.id))

    def get_messages(
        self, project: str, queue: str, message_ids: Sequence[str]
    ) -> Opened:
        """The alive ones among ``message_ids`` (possibly none); unreadable ones left out."""
        queue = self._queue_name(queue)
        ids = _id_shaped(validation.id_list(list(message_ids), self.limits))
        if not ids:
            return Opened([])
        return self._open(project, queue, "read by ids",
                          self._storage(project, queue).messages.get_many(project, queue, ids))

    def delete_message(
        self,
        project: str,
        queue: str,
        message_id: str,
        *,
        claim_id: str | None,
        client_id: str | None,
    ) -> None:
        """Delete one message (MessageIsClaimed / ClaimMismatch as the contract says)."""
        queue = self._queue_name(queue)
        if not validation.is_id_shaped(message_id):
            return  # no such message: nothing to delete
        storage = self._storage(project, queue)
        if claim_id and not validation.is_id_shaped(claim_id):
            # No claim has this id, so it holds no message: the contract's
            # answer for a message that exists, without sending the id down.
            try:
                storage.messages.get(project, queue, message_id)
            except MessageNotFound:
                return
            raise ClaimMismatch("No claim has this id; it holds no message.")
        # Naming the claim shows its holder is alive: the delete settles it
        # in its own step, and a refused one (even for an expired claim)
        # right after (zq.poison.consumers).
        settle = self._consumers.to_settle(project, queue, claim_id)
        try:
            storage.messages.delete(
                project, queue, message_id, claim_id=claim_id or None, client_id=client_id,
                settle_claim=settle,
            )
        except (ClaimMismatch, MessageIsClaimed):
            self._consumers.settled(storage.consumers, project, queue, claim_id,
                                    self.clock.now())
            raise
        if settle and claim_id:
            self._consumers.settled_in_step(project, queue, claim_id)

    def delete_messages(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        *,
        claim_ids: Sequence[str] | None,
        client_id: str | None,
    ) -> list[str]:
        """Delete several messages; with ``claim_ids`` only those their claims hold."""
        queue = self._queue_name(queue)
        ids = _id_shaped(validation.id_list(list(message_ids), self.limits))
        claims = None
        if claim_ids is not None:
            claims = _id_shaped(validation.id_list(list(claim_ids), self.limits, "claim_ids"))
        if not ids or claims == []:
            return []  # nothing named exists, or no named claim holds anything
        storage = self._storage(project, queue)
        deleted = storage.messages.delete_many(
            project, queue, ids, claim_ids=claims, client_id=client_id
        )
        for claim in claims or []:
            self._consumers.settled(storage.consumers, project, queue, claim,
                                    self.clock.now())
        return deleted

    def reject_message(
        self,
        project: str,
        queue: str,
        message_id: str,
        document: Any | None,
        *,
        claim_id: str | None,
        client_id: str | None,
    ) -> None:
        """The claim's holder gives a message up: terminal, or retry (``retry_after``).

        Terminal (no ``retry_after``): moved to the queue's dead letter
        queue now, history reason ``rejected`` with the description, in one
        atomic step (zq.poison.moves.rejected); Conflict when the queue has no
        ``_dead_letter_queue``, nothing moved. Retry: the message leaves the
        claim and is claimable again after ``retry_after`` seconds (0: at
        once; null: once the backoff its claim gave it has passed, as after
        a release). MessageNotFound for a missing message; without
        ``claim_id`` MessageIsClaimed (held) or ClaimMismatch (free);
        ClaimMismatch for a claim not holding it.
        """
        queue = self._queue_name(queue)
        rejection = validation.reject_document(document, self.limits)
        if not validation.is_id_shaped(message_id):
            raise MessageNotFound("No message has this id.")
        storage = self._storage(project, queue)
        if not claim_id or not validation.is_id_shaped(claim_id):
            held = storage.messages.get(project, queue, message_id).claim_id is not None
            if not claim_id and held:
                raise MessageIsClaimed(
                    f"Message {message_id!r} is claimed; give its claim id to reject it.")
            raise ClaimMismatch(
                "Only the holder of the live claim on a message may reject it: "
                "give that claim's id as claim_id.")
        self._consumers.settled(storage.consumers, project, queue, claim_id, self.clock.now())
        if rejection.retry:
            storage.messages.reject(
                project, queue, message_id, claim_id=claim_id, client_id=client_id,
                description=rejection.description, retry_after=rejection.retry_after)
            return
        stored = self._stored_metadata(project, queue)
        target = stored.get(meta.DEAD_LETTER_QUEUE)
        if not target:
            raise Conflict(
                f"Queue {queue!r} has no {meta.DEAD_LETTER_QUEUE}: a terminal reject has "
                "nowhere to move the message, and it stays where it is. Set "
                f"{meta.DEAD_LETTER_QUEUE}, or give retry_after to reject for a retry.")
        # The move is one step inside the queue's backend: the pool rule
        # (checked when _dead_letter_queue was written) keeps the dead
        # letter queue on the queue's pool, as for a claim's move.
        move = moves.rejected(target, stored.get(meta.DEAD_LETTER_TTL), rejection.description)
        moved = storage.messages.move(project, queue, [message_id], move,
                                      claim_id=claim_id, client_id=client_id)
        if not moved:
            raise MessageNotFound.gone(message_id)

    def pop_messages(
        self, project: str, queue: str, count: int, *, client_id: str | None
    ) -> list[MessageRecord]:
        """Take and delete up to ``count`` free messages (a delivery: dead letter rule applies)."""
        queue = self._queue_name(queue)
        count = validation.limit(count, self.limits.max_messages_per_claim_or_pop, "pop")
        storage = self._storage(project, queue)

        # Pop deletes what it returns: a body that cannot be opened must be
        # found before, or the message would be lost. It is moved to the dead
        # letter queue, or, without one, the pop is refused: it would be next.
        ahead = self._open(project, queue, "pop",
                           storage.messages.list(project, queue, limit=count, echo=True))
        if ahead.unreadable:
            self._set_aside(storage, project, queue, ahead.unreadable, claim=None)

        def pop(stored: dict[str, Any], version: str | None) -> list[MessageRecord]:
            rules = DeliveryRules(dead_letter=dead_letter.policy_from_metadata(stored),
                                  metadata_version=version)
            return storage.messages.pop(project, queue, limit=count, client_id=client_id,
                                        rules=rules)

        popped = self._with_metadata(project, queue, storage, pop)
        # An unreadable one here became free after the read above: it is
        # deleted, and left out with its id logged.
        return self._open(project, queue, "pop", popped).messages

    # -- claims ---------------------------------------------------------

    def claim(
        self,
        project: str,
        queue: str,
        document: Any | None,
        *,
        limit: int | None,
        client_id: str | None,
    ) -> OpenedClaim | None:
        """Claim up to ``limit`` free messages; None when none was delivered.

        A message whose body cannot be opened is left out of the claim and
        set aside (``_set_aside``); when every message taken was, the claim
        is released and comes back with no messages and those left out.
        """
        queue = self._queue_name(queue)
        ttl, grace = validation.claim_options(document, self.limits)
        size = validation.limit(
            self.limits.default_page_size if limit is None else limit,
            self.limits.max_messages_per_claim_or_pop,
        )
        storage = self._storage(project, queue)
        # The claim writes its consumer record in its own step (zq.poison.consumers).
        consumer = self._consumers.entry(client_id)

        def claim(stored: dict[str, Any], version: str | None) -> ClaimRecord | None:
            self._consumers.check(storage.consumers, project, queue, client_id, stored,
                                  self.clock.now())
            rules = DeliveryRules(
                dead_letter=dead_letter.policy_from_metadata(stored),
                backoff=backoff.policy_from_metadata(stored, self.limits.max_message_delay),
                consumer=consumer, metadata_version=version)
            return storage.claims.create(project, queue, ttl=ttl, grace=grace, limit=size,
                                         client_id=client_id, rules=rules)

        claimed = self._with_metadata(project, queue, storage, claim)
        if claimed is None:
            return None
        opened = self._open(project, queue, "claim", claimed.messages)
        if opened.unreadable:
            self._set_aside(storage, project, queue, opened.unreadable, claim=claimed)
            if not opened.messages:
                # Its holder never gets its id: ended now, not suspected of lapsing.
                storage.claims.release(project, queue, claimed.id, client_id=None)
                self._consumers.settled(storage.consumers, project, queue, claimed.id,
                                        self.clock.now(), ended=True)
        return opened_claim(claimed, opened)

    def get_claim(self, project: str, queue: str, claim_id: str) -> OpenedClaim:
        """A live claim with its messages (unreadable ones left out); raises ClaimNotFound."""
        queue = self._queue_name(queue)
        _check_claim_id(claim_id)
        claimed = self._storage(project, queue).claims.get(project, queue, claim_id)
        return opened_claim(claimed, self._open(project, queue, "claim", claimed.messages))

    def renew_claim(
        self,
        project: str,
        queue: str,
        claim_id: str,
        document: Any | None,
        *,
        client_id: str | None,
    ) -> None:
        """Extend a live claim by a new ttl (and grace); raises ClaimNotFound."""
        queue = self._queue_name(queue)
        ttl, grace = validation.claim_options(document, self.limits)
        _check_claim_id(claim_id)
        storage = self._storage(project, queue)
        # Also when the claim has expired (ClaimNotFound below): a late
        # renew shows its holder is alive (zq.poison.consumers).
        self._consumers.renewed(storage.consumers, project, queue, claim_id, ttl,
                                self.clock.now())
        storage.claims.renew(
            project, queue, claim_id, ttl=ttl, grace=grace, client_id=client_id
        )

    def release_claim(
        self, project: str, queue: str, claim_id: str, *, client_id: str | None
    ) -> None:
        """End a claim; its messages become free. No error when it is gone."""
        queue = self._queue_name(queue)
        if not validation.is_id_shaped(claim_id):
            return  # no such claim
        storage = self._storage(project, queue)
        storage.claims.release(project, queue, claim_id, client_id=client_id)
        self._consumers.settled(storage.consumers, project, queue, claim_id,
                                self.clock.now(), ended=True)

    def consumers(self, project: str, queue: str) -> list[consumers.Consumer]:
        """The Client-IDs that claimed from the queue in the last hour (zq.poison.consumers)."""
        queue = self._queue_name(queue)
        storage = self._storage(project, queue)
        stored = self._metadata_cache.get(storage, project, queue).read.metadata
        return self._consumers.list(storage.consumers, project, queue, stored, self.clock.now())

    # -- redrive (zq.poison.redrive) -------------------------------------------

    def redrive(
        self, project: str, queue: str, document: Any | None, *, client_id: str | None
    ) -> redrive.RedriveResult:
        """Move dead letters of ``queue`` back (``POST /v2/queues/{dlq}/redrive``).

        Selects with zq.poison.redrive's rule over at most ``limit`` messages (and
        a bounded walk, ``next`` continues), checks every destination before
        anything moves (another pool: DeadLetterConflict, 409; missing
        without ``create``: QueueNotFound, 404), and moves each
        destination's messages in one atomic step of the move primitive
        (zq.poison.moves.redriven). A message moved meanwhile by another caller (a
        racing redrive, a consumer's claim) is matched but not moved: the
        primitive skips it, so nothing moves twice. A dead letter queue that
        does not exist is QueueNotFound: a typo must not look like an empty
        queue.
        """
        queue = self._queue_name(queue)
        request = validation.redrive_document(document, self.limits)
        if request.to == queue:
            raise InvalidRequest(
                f"to names the dead letter queue itself ({queue!r}): a redrive moves "
                "messages out of it; name another queue, or leave to out to send each "
                "message back where it was dead lettered from.")
        storage = self._storage(project, queue)
        if not storage.queues.exists(project, queue):
            raise QueueNotFound(
                f"Queue {queue!r} does not exist, so there are no dead letters to redrive "
                "from it; check the name and the project.")
        unreadable: list[str] = []
        groups, matched, following = self._redrive_selection(project, queue, storage, request,
                                                             unreadable)
        created = self._check_redrive_destinations(project, queue, request, list(groups))
        if request.dry_run:
            counts = {to: len(ids) for to, ids in groups.items()}
            return redrive.RedriveResult(matched, 0, counts, following, created, unreadable)
        counts = {}
        for to, ids in groups.items():
            ttl = meta.effective(self._stored_metadata(project, to),
                                 meta.DEFAULT_MESSAGE_TTL, self.limits)
            moved = storage.messages.move(project, queue, ids, moves.redriven(to, ttl),
                                          client_id=client_id)
            if moved:
                counts[to] = len(moved)
        return redrive.RedriveResult(matched, sum(counts.values()), counts, following, created,
                                     unreadable)

    def _redrive_selection(
        self, project: str, queue: str, storage: Storage, request: redrive.RedriveRequest,
        unreadable: list[str],
    ) -> tuple[dict[str, list[str]], int, str | None]:
        """The selected ids by destination, how many, and the ``next`` marker.

        A fingerprint filter needs each body's plaintext: the ids of those
        that cannot be opened go to ``unreadable`` (never selected).
        """
        page_size = validation.redrive_limit_cap(self.limits)
        groups: dict[str, list[str]] = {}
        fingerprint_of = self._fingerprint_of(project, queue, unreadable)

        def take(records: list[MessageRecord], room: int) -> int | None:
            # A held message is not taken from its holder (the primitive
            # would skip it too), nor one that would go back into the queue.
            free = [r for r in records if r.claim_id is None]
            found, read, last = redrive.select(free, request, fingerprint_of, room)
            for to, ids in found.items():
                if to != queue:
                    groups.setdefault(to, []).extend(ids)
            if read < len(free):  # stopped inside the page: the last one read is the marker
                return last
            return records[-1].marker if records else None

        if request.filter.ids is not None:
            if request.filter.ids:
                take(storage.messages.get_many(project, queue, request.filter.ids),
                     request.limit)
            return groups, _count(groups), None
        marker = validation.message_marker(request.marker)
        budget = page_size * redrive.SCAN_FACTOR
        while True:
            page = storage.messages.list(project, queue, marker=marker, limit=page_size,
                                         echo=True, include_delayed=True, include_claimed=True)
            room = request.limit - _count(groups)
            last = take(page, room)
            if last is not None:
                marker = last
            budget -= len(page)
            if len(page) < page_size and _count(groups) < request.limit:
                return groups, _count(groups), None  # the end of the queue
            if _count(groups) >= request.limit or budget <= 0 or not page:
                return groups, _count(groups), None if not page else str(marker)

    def _fingerprint_of(self, project: str, queue: str,
                        unreadable: list[str]) -> Callable[[MessageRecord], str]:
        """The fingerprint events and analytics give a stored message (keyed if sealed).

        One whose body cannot be opened has none (``""`` matches no filter);
        its id goes to ``unreadable``.
        """

        def fingerprint(record: MessageRecord) -> str:
            if not is_sealed(record.body):
                return events.fingerprint(record.body)
            opened = open_each(self._cipher, project, queue, [record], "redrive by fingerprint")
            if opened.unreadable:
                unreadable.append(record.id)
                return ""
            assert self._cipher is not None  # a sealed body opened: there are keys
            return self._cipher.fingerprint(opened.messages[0].body)

        return fingerprint

    def _check_redrive_destinations(
        self, project: str, queue: str, request: redrive.RedriveRequest, destinations: list[str]
    ) -> tuple[str, ...]:
        """Every destination on the dead letter queue's pool, and existing unless ``create``.

        Returns the missing destinations that messages go to, which the
        moves create (a dry run: would create); outside a dry run they are
        first registered beside the dead letter queue, so the catalog says
        where they are.
        """
        home = self.pools.pool_of(project, queue)
        missing = []
        # A "to" is checked even when nothing matched: a misspelt one is
        # refused before the first page, not when a later page finds messages.
        named_to = [] if request.to is None else [request.to]
        for to in sorted({*destinations, *named_to}):
            pool = self.pools.pool_of(project, to)
            if pool is not None and pool != home:
                raise DeadLetterConflict(
                    f"Queue {to!r} lives on pool {pool!r} but dead letter queue {queue!r} "
                    f"lives on pool {home!r}: a redrive moves messages within one pool. "
                    "Nothing was moved; leave this destination out with filter.from, "
                    "or redrive to a queue of that pool.")
            if not self._storage(project, to).queues.exists(project, to):
                missing.append(to)
        if missing and not request.create:
            # Creating a queue nobody consumes from would strand the
            # messages: a misspelt "to", or a source deleted on purpose.
            named = ", ".join(repr(to) for to in missing)
            subject = f"Queue {named}" if len(missing) == 1 else f"Queues {named}"
            if request.to is None:
                subject += ", which the messages were dead lettered from,"
            verb = "does" if len(missing) == 1 else "do"
            raise QueueNotFound(
                f"{subject} {verb} not exist. A redrive creates a missing destination "
                'only when asked: "create": true (zq redrive --create), or create the '
                "queue first. Nothing was moved.")
        created = tuple(to for to in missing if to in destinations)
        if not request.dry_run:
            for to in created:
                if self.pools.pool_of(project, to) is None:
                    self.pools.place_beside(project, to, beside=queue)
        return created

    # -- operations -----------------------------------------------------

    def ping(self) -> bool:
        """Whether every backend answers."""
        return all(
            not isinstance(s, PoolDown) and s.ping() for s in self.pools.storages().values()
        )

    def health(self) -> dict[str, Any]:
        """Reachability and read-only probe results, per pool when pooling."""
        reports = {name: _probe(storage) for name, storage in self.pools.storages().items()}
        if not self.pools.per_pool and len(reports) == 1:
            return next(iter(reports.values()))
        return reports

    # -- rules ----------------------------------------------------------

    def _queue_name(self, queue: str) -> str:
        return validation.queue_name(queue, self.limits)

    def _storage(self, project: str, queue: str) -> Storage:
        return self.pools.storage_for(project, queue)

    def _stored_metadata(self, project: str, queue: str) -> dict[str, Any]:
        # Queues are lazy: one never created behaves as one with no metadata.
        return self._storage(project, queue).queues.read_metadata(project, queue).metadata

    def _check_encryption(self, metadata: dict[str, Any], current: dict[str, Any]) -> None:
        """Refuse turning encryption on without keys (a flag set earlier may stay)."""
        turned_on = metadata.get(meta.ENCRYPT_MESSAGES) and not current.get(meta.ENCRYPT_MESSAGES)
        if turned_on and self._cipher is None:
            raise EncryptionNotConfigured(
                f"{meta.ENCRYPT_MESSAGES} cannot be true: this server has no [encryption] "
                "keys configured (see docs/encryption.md)."
            )

    def _sealing_cipher(self, metadata: dict[str, Any]) -> BodyCipher | None:
        """The cipher a post seals with: None for a queue that does not encrypt."""
        if not metadata.get(meta.ENCRYPT_MESSAGES):
            return None
        if self._cipher is None:
            # The flag was set while keys were configured; never fall back to plaintext.
            raise EncryptionFailure(
                f"The queue has {meta.ENCRYPT_MESSAGES} set but this server has no "
                "[encryption] keys configured; refusing to store its messages unencrypted."
            )
        return self._cipher

    def _open(self, project: str, queue: str, read: str,
              records: Sequence[MessageRecord]) -> Opened:
        """Records as clients see them: sealed bodies opened, whatever the queue's flag."""
        return open_each(self._cipher, project, queue, records, read)

    def _set_aside(self, storage: Storage, project: str, queue: str,
                   unreadable: Sequence[Unreadable], *, claim: ClaimRecord | None) -> None:
        """Take unreadable messages a claim (or a pop, ``claim`` None) took out of the way.

        With a ``_dead_letter_queue``: moved there now, reason ``unreadable``
        and the failure as description (zq.poison.moves.unreadable); a redrive
        brings them back once the key is restored. Without one, a claimed
        message leaves the claim and is claimable again after the claim's
        ttl (a retry reject): its claim count is its own, it is not held by
        a claim its holder never saw, and it does not come back first in
        every claim. A pop without a dead letter queue is refused
        (EncryptionFailure): popping would delete it, and it is next.
        """
        stored = self._stored_metadata(project, queue)
        target = stored.get(meta.DEAD_LETTER_QUEUE)
        if not target and claim is None:
            raise EncryptionFailure(unreadable[0].reason)
        for message in unreadable:
            try:
                if target:
                    move = moves.unreadable(target, stored.get(meta.DEAD_LETTER_TTL),
                                            message.reason)
                    storage.messages.move(project, queue, [message.id], move,
                                          claim_id=claim.id if claim else None, client_id=None)
                elif claim is not None:
                    storage.messages.reject(project, queue, message.id, claim_id=claim.id,
                                            client_id=None, description=message.reason,
                                            retry_after=claim.ttl)
            except (ClaimMismatch, MessageNotFound):
                continue  # it left the claim meanwhile (expired, deleted): nothing to do

    def _with_metadata(
        self,
        project: str,
        queue: str,
        storage: Storage,
        act: Callable[[dict[str, Any], str | None], T],
    ) -> T:
        """``act(metadata, version)`` with the queue's metadata, cached where safe.

        ``version`` is given only where the driver checks it
        (``Storage.checks_metadata_version``), which refuses a stale one (MetadataChanged):
        read again and act again; the last attempt passes no version, as
        for the other drivers. A refusal
        (InvalidRequest) made on cached metadata is checked against a fresh
        read too: a stale post size cap must not refuse a post.
        """
        attempts = METADATA_ATTEMPTS
        while True:
            attempts -= 1
            cached = self._metadata_cache.get(storage, project, queue)
            checked = attempts > 0 and storage.checks_metadata_version
            try:
                return act(cached.read.metadata, cached.read.version if checked else None)
            except MetadataChanged:
                self._metadata_cache.forget(project, queue)
            except InvalidRequest:
                if not cached.hit:
                    raise
                self._metadata_cache.forget(project, queue)

    def _write_metadata(self, queue: str, attempt: Callable[[], T]) -> T:
        """``attempt()``: read, decide and write metadata, again while a version moved.

        Each attempt reads what it decides on afresh and writes on the
        condition that none of it changed meanwhile (MetadataChanged when
        it did), so no write is lost and no dead letter cycle is formed by
        two writers at once. Past METADATA_WRITE_ATTEMPTS: MetadataConflict.
        """
        for _ in range(METADATA_WRITE_ATTEMPTS):
            try:
                return attempt()
            except MetadataChanged:
                continue
        raise MetadataConflict(
            f"The metadata of queue {queue!r} (or the dead letter queues of its project) "
            f"changed {METADATA_WRITE_ATTEMPTS} times while this request was changing it; "
            "nothing was written. Read the metadata again and retry."
        )

    def _checked_links(
        self, storage: Storage, project: str, queue: str, target: str | None
    ) -> str | None:
        """The links version to write ``queue -> target`` with, the chain checked under it.

        None when there is no link to check (no dead letter queue). The
        version is read before the chain, so a link written meanwhile by
        another writer moves it and this write fails. The queues of a
        chain share one pool, so ``storage`` holds the whole chain.
        """
        if target is None:
            return None
        links = storage.queues.links_version(project)
        self._check_dead_letter_chain(project, queue, target)
        return links

    def _check_dead_letter_chain(self, project: str, queue: str, target: str | None) -> None:
        if target is None:
            return

        def next_in_chain(name: str) -> str | None:
            return self._stored_metadata(project, name).get(meta.DEAD_LETTER_QUEUE)

        dead_letter_chain.check_chain(queue, target, next_in_chain)

    def _create_dead_letter_queue(
        self, storage: Storage, project: str, target: str | None
    ) -> None:
        """Create the dead letter queue, on its source's storage (the pool rule's promise)."""
        if target is not None:
            storage.queues.create(project, target, {})


def _checked(storage: Storage, version: str | None) -> str | None:
    """``version`` where ``storage`` checks metadata versions; None elsewhere."""
    return version if storage.checks_metadata_version else None


def _id_shaped(ids: list[str]) -> list[str]:
    """The ids that could name something; the others are unknown ids, skipped."""
    return [i for i in ids if validation.is_id_shaped(i)]


def _count(groups: Mapping[str, list[str]]) -> int:
    return sum(len(ids) for ids in groups.values())


def _check_claim_id(claim_id: str) -> None:
    if not validation.is_id_shaped(claim_id):
        raise ClaimNotFound("No claim has this id.")


def apply_patch(
    metadata: dict[str, Any], changes: Sequence[validation.MetadataChange]
) -> dict[str, Any]:
    """The metadata after the changes, in order (Zaqar's JSON-patch semantics).

    ``add`` sets a key; ``replace`` and ``remove`` of an absent ordinary key
    raise Conflict (reserved keys always count as present).
    """
    updated = dict(metadata)
    for change in changes:
        present = change.key in updated or meta.is_reserved(change.key)
        if change.op in ("replace", "remove") and not present:
            raise Conflict(f"Cannot {change.op} metadata key {change.key!r}: it is not set.")
        if change.op == "remove":
            updated.pop(change.key, None)
        else:
            updated[change.key] = change.value
    return updated


def _probe(storage: Storage | PoolDown) -> dict[str, Any]:
    """Ping a backend, time a few read-only operations on it, count its messages.

    ``message_volume`` (free, claimed, total alive messages of the backend)
    is Zaqar's (its MongoDB and SQL drivers' ``_health``).
    """
    if isinstance(storage, PoolDown):
        return {"storage_reachable": False, "operation_status": {}}
    reachable = storage.ping()
    status: dict[str, Any] = {}
    if reachable:
        probes: dict[str, Callable[[], object]] = {
            "list_queues": lambda: storage.queues.list(HEALTH_PROJECT, limit=1),
            "queue_stats": lambda: storage.queues.stats(HEALTH_PROJECT, HEALTH_QUEUE),
            "list_messages": lambda: storage.messages.list(
                HEALTH_PROJECT, HEALTH_QUEUE, limit=1
            ),
        }
        for name, probe in probes.items():
            started = time.perf_counter()
            try:
                probe()
                succeeded = True
            except Exception:  # a probe reports a failure, it never raises it
                succeeded = False
            status[name] = {
                "succeeded": succeeded,
                "seconds": round(time.perf_counter() - started, 6),
                "ref": None,
            }
    report: dict[str, Any] = {"storage_reachable": reachable, "operation_status": status}
    if reachable:
        try:
            volume = storage.queues.volume()
        except Exception:  # a health report shows what it can, it never fails
            return report
        report["message_volume"] = {
            "free": volume.free, "claimed": volume.claimed, "total": volume.total,
        }
    return report

