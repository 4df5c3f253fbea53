"""QueueService: every operation the API offers, one short public method each.

The parts each method calls live beside it in zq.service (see its package
documentation): bodies, metadata writes, deliveries, rejects, redrive, health.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zq import metadata as meta
from zq import subscriptions, validation
from zq.clock import Clock, SystemClock
from zq.config import Limits
from zq.encryption import BodyCipher
from zq.errors import (
    ClaimMismatch,
    ClaimNotFound,
    MessageIsClaimed,
    MessageNotFound,
    QueueNotFound,
)
from zq.poison import backoff, consumers, dead_letter, redrive
from zq.pooling import Pools
from zq.service import breakers, posts, rejects
from zq.service import health as health_report
from zq.service import metadata_writes as writes
from zq.service.auto_redrive import REQUEST_BUDGET, AutoRedrive
from zq.service.bodies import Bodies
from zq.service.deliveries import outage_rules, version_for, with_metadata
from zq.service.metadata_cache import MetadataCache
from zq.service.opening import Opened, OpenedClaim, opened_claim
from zq.service.redrive import Redrive
from zq.service.subscribed import SubscribedQueues
from zq.storage.base import Storage
from zq.storage.breakers import BreakerState
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import ClaimRecord, MessageRecord, QueueRecord, QueueStats

# Seconds a process keeps a queue's breaker setting for its deletes (_outage_metadata).
OUTAGE_RULES_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class QueuePage:
    """One page of a queue listing."""

    queues: list[QueueRecord]
    count: int | None  # total matching queues, when asked for


@dataclass(frozen=True, slots=True)
class QueueReport:
    """What ``GET .../stats`` shows: the counts, and the breaker when it is on."""

    stats: QueueStats
    breaker: BreakerState | None


class QueueService:
    """Every operation the API offers, scoped by project and queue."""

    def __init__(self, limits: Limits, pools: Pools, *,
                 metadata_cache: MetadataCache | None = None,
                 cipher: BodyCipher | None = None, clock: Clock | None = None,
                 subscribed: SubscribedQueues | None = None,
                 on_claimable: Callable[[str, str], None] | None = None) -> None:
        """``on_claimable(project, queue)``: told of each change that may have
        made a message claimable, for this process's waiting claims (zq.waiting)."""
        self.limits = limits
        self._on_claimable = on_claimable
        self.pools = pools
        # The consumer log's times (zq.poison.consumers); the drivers keep their own.
        self.clock = clock or SystemClock()
        self._consumers = consumers.ConsumerRule(limits.max_claim_ttl)
        self._metadata_cache = metadata_cache or MetadataCache(0)
        # What a delete by a claim's holder reads to know whether it is a
        # breaker's success: kept OUTAGE_RULES_SECONDS at least, so that the
        # deletes of a queue without a breaker cost no metadata read each.
        self._outage_cache = MetadataCache(
            max(OUTAGE_RULES_SECONDS, self._metadata_cache.seconds), versioned=False)
        self._bodies = Bodies(cipher)  # cipher None: no [encryption] keys configured
        self._redrive = Redrive(limits, pools, self._bodies, self._stored_metadata)
        self._auto_redrive = AutoRedrive(limits, self.clock)
        # Shared with this process's SubscriptionService, which forgets a
        # queue whose subscriptions it changes.
        self.subscribed = subscribed or SubscribedQueues(self.clock)

    # -- queues ---------------------------------------------------------

    def create_queue(self, project: str, queue: str, metadata: Any | None) -> bool:
        """Create a queue with optional metadata; False when it already existed."""
        queue = self._queue_name(queue)
        checked = meta.validate({} if metadata is None else metadata, self.limits)
        self._bodies.check_encryption(checked, {})
        if self._storage(project, queue).queues.exists(project, queue):
            return False
        flavor = checked.get(meta.FLAVOR)
        if flavor is not None:
            self.pools.check_flavor(flavor)
        target = checked.get(meta.DEAD_LETTER_QUEUE)
        # Refused before the queue is registered anywhere; checked again
        # against the links version when written.
        writes.check_chain(queue, target, self._metadata_of(project))
        self._metadata_cache.forget(project, queue)
        self._outage_cache.forget(project, queue)
        storage = self.pools.place(project, queue, flavor=flavor, dead_letter_queue=target)

        def create() -> bool:
            links = writes.checked_links(storage, project, queue, target,
                                         self._metadata_of(project))
            return storage.queues.create(project, queue, checked, links_version=links)

        created = writes.write_metadata(queue, create)
        writes.create_dead_letter_queue(storage, project, target)
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
            checked = meta.validate(writes.apply_patch(current.metadata, changes), self.limits)
            self._bodies.check_encryption(checked, current.metadata)
            flavor = checked.get(meta.FLAVOR)
            if flavor is not None and flavor != current.metadata.get(meta.FLAVOR):
                # A queue stays where it was placed; _flavor only has to exist.
                self.pools.check_flavor(flavor)
            target = checked.get(meta.DEAD_LETTER_QUEUE)
            links = None
            if target != current.metadata.get(meta.DEAD_LETTER_QUEUE):
                links = writes.checked_links(storage, project, queue, target,
                                         self._metadata_of(project))
                self.pools.link_dead_letter(project, queue, target)
            storage.queues.set_metadata(
                project, queue, checked, expected_version=current.version, links_version=links
            )
            return checked, target

        checked, target = writes.write_metadata(queue, patch)
        self._metadata_cache.forget(project, queue)
        self._outage_cache.forget(project, queue)
        writes.create_dead_letter_queue(storage, project, target)
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
        self._outage_cache.forget(project, queue)

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

    def queue_report(self, project: str, queue: str) -> QueueReport:
        """The counts, and the breaker's state when ``_breaker_failure_ratio`` is set."""
        queue = self._queue_name(queue)
        storage = self._storage(project, queue)
        stats = storage.queues.stats(project, queue)
        stored = self._metadata_cache.get(storage, project, queue).read.metadata
        return QueueReport(stats, breakers.read(storage, project, queue, stored,
                                                self.clock.now()))

    def breaker(self, project: str, queue: str) -> BreakerState | None:
        """The queue's breaker, None when it is off; QueueNotFound for a queue never created."""
        queue = self._queue_name(queue)
        storage = self._storage(project, queue)
        current = storage.queues.read_metadata(project, queue)
        if not current.exists:
            raise QueueNotFound.gone(queue)
        return breakers.read(storage, project, queue, current.metadata, self.clock.now())

    def force_breaker(self, project: str, queue: str, document: Any | None) -> BreakerState:
        """Force the queue's breaker open or closed (``POST .../breaker``).

        InvalidRequest for a body other than ``{"state": "open"|"closed"}``,
        QueueNotFound for a queue never created, Conflict when its breaker
        is off (zq.service.breakers).
        """
        queue = self._queue_name(queue)
        state = breakers.forced_state(document)
        storage = self._storage(project, queue)
        forced = breakers.force(storage, project, queue, state, self.clock.now())
        if forced.redrive_due:
            # Closed by hand after an outage: its dead letters come back now.
            self._auto_redrive.run(storage, project, queue,
                                   self._stored_metadata(project, queue),
                                   budget=REQUEST_BUDGET)
        return forced

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
            new = posts.new_messages(self.limits, self._bodies, stored, document, body_size)
            # Posting creates a queue implicitly: a new one is placed (no
            # flavor). A version read where the queue was not registered is
            # None; one read from a pool the queue has since left is refused
            # by the driver (versions are random), and the post is retried.
            placed = self.pools.place(project, queue)
            new = self._bodies.sealed(placed, project, stored, new)
            new = self.subscribed.with_event_bodies(placed, project, queue, new)
            rules = DeliveryRules(metadata_version=version_for(placed, version))
            ids = placed.messages.post(project, queue, new, client_id=client_id, rules=rules)
            if any(message.delay == 0 for message in new):
                self._claimable(placed, project, queue)
            return ids

        return with_metadata(self._metadata_cache, project, queue, storage, post)

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
        """A page of alive messages in queue order; unreadable bodies left out."""
        queue = self._queue_name(queue)
        size = validation.limit(
            self.limits.default_page_size if limit is None else limit,
            self.limits.max_messages_per_page,
        )
        storage = self._storage(project, queue)
        return self._bodies.open(project, queue, "listing", storage.messages.list(
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
        return self._bodies.open_one(project, record)

    def get_messages(
        self, project: str, queue: str, message_ids: Sequence[str]
    ) -> Opened:
        """The alive ones among ``message_ids`` (possibly none); unreadable ones left out."""
        queue = self._queue_name(queue)
        ids = _id_shaped(validation.id_list(list(message_ids), self.limits))
        if not ids:
            return Opened([])
        return self._bodies.open(project, queue, "read by ids",
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
        # A delete by the claim's holder is a success for the queue's breaker;
        # one without a claim is neither, and reads no metadata for it.
        stored = self._outage_metadata(storage, project, queue) if claim_id else {}
        rules = outage_rules(storage, stored)
        try:
            storage.messages.delete(
                project, queue, message_id, claim_id=claim_id or None, client_id=client_id,
                settle_claim=settle, rules=rules,
            )
        except (ClaimMismatch, MessageIsClaimed):
            self._consumers.settled(storage.consumers, project, queue, claim_id,
                                    self.clock.now())
            raise
        if settle and claim_id:
            self._consumers.settled_in_step(project, queue, claim_id)
        if claim_id and rules.breaker is not None:
            # A probe's delete may have closed the breaker (zq.service.auto_redrive).
            self._auto_redrive.after_success(storage, project, queue, stored)

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
        stored = {} if claims is None else self._outage_metadata(storage, project, queue)
        rules = outage_rules(storage, stored)
        # Naming its claims shows their holder is alive: the batch settles
        # them in its own step, unless this process already did
        # (zq.poison.consumers): no write of its own per batch.
        settle = any(self._consumers.to_settle(project, queue, c) for c in claims or [])
        deleted = storage.messages.delete_many(
            project, queue, ids, claim_ids=claims, client_id=client_id,
            settle_claims=settle, rules=rules,
        )
        if claims and deleted and rules.breaker is not None:
            self._auto_redrive.after_success(storage, project, queue, stored)
        for claim in claims if settle and claims else []:
            self._consumers.settled_in_step(project, queue, claim)
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
            rejects.refuse_without_claim(storage, project, queue, message_id, claim_id)
        self._consumers.settled(storage.consumers, project, queue, claim_id, self.clock.now())
        stored = self._stored_metadata(project, queue)
        rules = outage_rules(storage, stored)
        if rejection.retry:
            storage.messages.reject(
                project, queue, message_id, claim_id=claim_id, client_id=client_id,
                description=rejection.description, retry_after=rejection.retry_after,
                rules=rules)
            self._claimable(storage, project, queue)
        else:
            rejects.move_to_dead_letter_queue(
                storage, project, queue, message_id, rejection.description,
                stored, claim_id=claim_id, client_id=client_id, rules=rules)
            if rules.breaker is not None:
                # An open breaker holds it as a retry: it may be claimable again.
                self._claimable(storage, project, queue)

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
        ahead = self._bodies.open(project, queue, "pop",
                           storage.messages.list(project, queue, limit=count, echo=True))
        if ahead.unreadable:
            rejects.set_aside(storage, project, queue, ahead.unreadable,
                              self._stored_metadata(project, queue), claim=None)

        def pop(stored: dict[str, Any], version: str | None) -> list[MessageRecord]:
            outage = outage_rules(storage, stored)
            rules = DeliveryRules(dead_letter=dead_letter.policy_from_metadata(stored),
                                  metadata_version=version, breaker=outage.breaker,
                                  blame_split=outage.blame_split)
            return storage.messages.pop(project, queue, limit=count, client_id=client_id,
                                        rules=rules)

        popped = with_metadata(self._metadata_cache, project, queue, storage, pop)
        # An unreadable one here became free after the read above: it is
        # deleted, and left out with its id logged.
        return self._bodies.open(project, queue, "pop", popped).messages

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
        set aside (``rejects.set_aside``); when every message taken was, the claim
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
            outage = outage_rules(storage, stored)
            rules = DeliveryRules(
                dead_letter=dead_letter.policy_from_metadata(stored),
                backoff=backoff.policy_from_metadata(stored, self.limits.max_message_delay),
                consumer=consumer, metadata_version=version, breaker=outage.breaker,
                blame_split=outage.blame_split)
            return storage.claims.create(project, queue, ttl=ttl, grace=grace, limit=size,
                                         client_id=client_id, rules=rules)

        claimed = with_metadata(self._metadata_cache, project, queue, storage, claim)
        if claimed is None:
            return None
        opened = self._bodies.open(project, queue, "claim", claimed.messages)
        if opened.unreadable:
            rejects.set_aside(storage, project, queue, opened.unreadable,
                              self._stored_metadata(project, queue), claim=claimed)
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
        return opened_claim(claimed, self._bodies.open(project, queue, "claim", claimed.messages))

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
        self._claimable(storage, project, queue)
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
        queue. Details: zq.service.redrive.
        """
        queue = self._queue_name(queue)
        request = validation.redrive_document(document, self.limits)
        result = self._redrive.run(project, queue, request, client_id=client_id)
        if result.moved:
            for destination in result.to:
                self._claimable(self._storage(project, destination), project, destination)
        return result

    # -- operations -----------------------------------------------------

    def ping(self) -> bool:
        """Whether every backend answers."""
        return health_report.ping(self.pools)

    def health(self) -> dict[str, Any]:
        """Reachability and read-only probe results, per pool when pooling."""
        return health_report.health(self.pools)

    # -- rules ----------------------------------------------------------

    def _claimable(self, storage: Storage, project: str, queue: str) -> None:
        """Wake the claims waiting on ``queue``: in this process, and through the backend."""
        storage.wakeups.notify(project, queue)
        if self._on_claimable is not None:
            self._on_claimable(project, queue)

    def _queue_name(self, queue: str) -> str:
        return validation.queue_name(queue, self.limits)

    def _storage(self, project: str, queue: str) -> Storage:
        return self.pools.storage_for(project, queue)

    def _outage_metadata(self, storage: Storage, project: str, queue: str) -> dict[str, Any]:
        """The metadata a delete reads for the breaker; {} on a driver without one.

        Read through a cache of OUTAGE_RULES_SECONDS: a breaker just turned
        on (or off) counts deletes as successes from at most that much later
        in this process; successes only weigh against failures, which are
        counted on fresh metadata (rejects, and the claims that find lapses).
        """
        if not storage.has_breaker:
            return {}
        return self._outage_cache.get(storage, project, queue).read.metadata

    def _stored_metadata(self, project: str, queue: str) -> dict[str, Any]:
        # Queues are lazy: one never created behaves as one with no metadata.
        return self._storage(project, queue).queues.read_metadata(project, queue).metadata

    def _metadata_of(self, project: str) -> Callable[[str], dict[str, Any]]:
        """A queue's stored metadata by name, in ``project`` (for the chain check)."""
        return lambda name: self._stored_metadata(project, name)


def _id_shaped(ids: list[str]) -> list[str]:
    """The ids that could name something; the others are unknown ids, skipped."""
    return [i for i in ids if validation.is_id_shaped(i)]


def _check_claim_id(claim_id: str) -> None:
    if not validation.is_id_shaped(claim_id):
        raise ClaimNotFound("No claim has this id.")
