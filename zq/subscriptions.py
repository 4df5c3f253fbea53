"""The subscription rules: Zaqar v2's subscription API, between HTTP and storage.

Checks documents as Zaqar's validator does (zaqar/transport/validation.py:
its texts, its order of checks), applies the default ttl, resolves the
queue's storage through the pooling resolver and calls the storage
contract's SubscriptionController. Knows nothing about HTTP, and nothing
about delivery (zq.notifications reads the same storage).

Confirmation (Zaqar's ``require_confirmation``): every subscription starts
unconfirmed, as in Zaqar; ``PUT .../confirm`` sets it. With
``[notifications] require_confirmation`` the notifier sends nothing to an
unconfirmed subscriber (``deliverable``), and the service asks its
``ConfirmationRequests`` (zq.notifications.confirmation_requests: it only
records the request, the notifier sends it) for a confirmation request
where Zaqar sends one: on create, on a repeated create of an unconfirmed
subscription and on ``confirmed: false``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlparse

from zq import retry_policy, subscribers, validation
from zq.config import Limits
from zq.errors import InvalidRequest, SubscriptionConflict, SubscriptionNotFound
from zq.pooling import Pools
from zq.service.subscribed import SubscribedQueues
from zq.storage.base import Storage
from zq.storage.records import SubscriptionRecord
from zq.storage.subscriptions import new_subscription_id

# Zaqar's subscriber_types less trust+http(s), which need Keystone trusts.
SUBSCRIBER_TYPES = ("http", "https", "mailto")
# The keys of a subscription document; anything else is refused (Zaqar
# ignores unknown keys silently).
FIELDS = frozenset({"subscriber", "ttl", "options"})
# A subscription id zq issued (uuid4 text); others name nothing.
ID_LENGTH = 36


@dataclass(frozen=True, slots=True)
class SubscriptionChanges:
    """A checked subscription document: None for each field not given."""

    subscriber: str | None = None
    ttl: int | None = None
    options: dict[str, Any] | None = None


class Webhooks(Protocol):
    """Where webhooks may go (zq.notifications.hosts.AllowedHosts)."""

    def never(self, url: str) -> str | None:
        """Why ``url`` can never be notified; None when it may be."""


class ConfirmationRequests(Protocol):
    """Sends a subscriber the request to confirm (or the news it unsubscribed)."""

    def request(self, subscription: SubscriptionRecord, *, unsubscribed: bool) -> None: ...


def _changes(document: Any, limits: Limits) -> SubscriptionChanges:
    """Zaqar's ``subscription_patching`` checks, in its order, plus zq's bounds."""
    if not document:
        raise InvalidRequest("No subscription to create.")
    if not isinstance(document, dict):
        raise InvalidRequest("Subscriptions must be a dict.")
    validation.refuse_unknown(document, FIELDS, lambda unknown: (
        f"Unknown subscription fields {unknown}; known: {sorted(FIELDS)}."))
    subscriber = document.get("subscriber")
    if "subscriber" in document:
        subscriber = _subscriber(subscriber, limits)
    options = document.get("options")
    if options is not None and not isinstance(options, dict):
        raise InvalidRequest("Options must be a dict.")
    if options is not None:
        _options(options)
    ttl = document.get("ttl")
    if ttl is not None:
        ttl = _ttl(ttl, limits)
    return SubscriptionChanges(subscriber, ttl, options)


def _subscriber(value: Any, limits: Limits) -> str:
    kind = urlparse(value).scheme if isinstance(value, str) else None
    if kind not in SUBSCRIBER_TYPES:
        raise InvalidRequest("The subscriber type of subscription must be supported in "
                             f"the list {list(SUBSCRIBER_TYPES)}.")
    parsed = urlparse(value)
    if kind in ("http", "https") and not parsed.hostname:
        raise InvalidRequest(f"The subscriber {value!r} names no host.")
    if kind == "mailto" and "@" not in parsed.path:
        raise InvalidRequest(f"The subscriber {value!r} names no mail address.")
    if len(value) > limits.max_subscriber_length:
        raise InvalidRequest(
            f"Subscribers may not be more than {limits.max_subscriber_length} characters long.")
    if validation.CONTROL_CHARACTERS.search(value):
        raise InvalidRequest("The subscriber may not contain control characters.")
    problem = (subscribers.url_problem(value) if kind in ("http", "https")
               else subscribers.mailto_problem(value))
    if problem is not None:
        raise InvalidRequest(problem)
    return value


def _options(options: dict[str, Any]) -> None:
    """Refuse options the notifier could never honour (each would fail every attempt)."""
    if retry_policy.POLICY in options:
        retry_policy.check(options[retry_policy.POLICY], f"options.{retry_policy.POLICY}")
    if "post_headers" in options:
        problem = subscribers.headers_problem(options["post_headers"])
        if problem is not None:
            raise InvalidRequest(problem)


def _ttl(value: Any, limits: Limits) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest("TTL must be an integer.")
    if value < limits.min_subscription_ttl:
        raise InvalidRequest("The TTL for a subscription must be at least "
                             f"{limits.min_subscription_ttl} seconds long.")
    if value > limits.max_subscription_ttl:
        raise InvalidRequest("The TTL for a subscription may not exceed "
                             f"{limits.max_subscription_ttl} seconds.")
    return value


def posting(document: Any, limits: Limits) -> SubscriptionChanges:
    """A create document: ``subscriber`` required, ``ttl`` and ``options`` optional."""
    # Zaqar checks for the subscriber first (an absent body reads as {});
    # it answers a body that is no object with a 503, zq with a 400.
    if document is None or (isinstance(document, dict) and "subscriber" not in document):
        raise InvalidRequest("Missing parameter subscriber in body.")
    if not isinstance(document, dict):
        raise InvalidRequest("Subscriptions must be a dict.")
    return _changes(document, limits)


def patching(document: Any, limits: Limits) -> SubscriptionChanges:
    """A PATCH document: at least one of the fields."""
    return _changes(document, limits)


def confirming(document: Any) -> bool:
    """The ``{"confirmed": true|false}`` document of ``PUT .../confirm``."""
    confirmed = document.get("confirmed") if isinstance(document, dict) else None
    if not isinstance(confirmed, bool):
        raise InvalidRequest("The 'confirmed' should be boolean.")
    validation.refuse_unknown(document, {"confirmed"}, lambda unknown: (
        f"Unknown confirmation fields {unknown}; known: ['confirmed']."))
    return confirmed


def deliverable(subscription: SubscriptionRecord, *, require_confirmation: bool) -> bool:
    """Whether the notifier sends to this subscription (Zaqar's rule)."""
    return subscription.confirmed or not require_confirmation


def purge(storage: Storage, project: str, queue: str) -> int:
    """Delete every subscription of the queue (a purge's ``subscriptions``); how many."""
    found = storage.subscriptions.for_queue(project, queue)
    for subscription in found:
        storage.subscriptions.delete(project, queue, subscription.id)
    return len(found)


def _start_notifications(storage: Storage, subscription_id: str) -> None:
    """A new subscription's notifications start at the log's end.

    Its cursor is stored before the subscription (the notifier never finds
    one without it), so its first notification does not wait for a read of
    the whole log; nothing before the subscription is its business anyway.
    """
    end = storage.events.end()
    if end is not None:  # an empty log: reading it from its start costs nothing
        storage.notification_cursors.start(subscription_id, end)


def _id_shaped(subscription_id: str) -> bool:
    return len(subscription_id) == ID_LENGTH and validation.is_id_shaped(subscription_id)


class SubscriptionService:
    """Every subscription operation of the API, scoped by project and queue."""

    def __init__(self, limits: Limits, pools: Pools, *, require_confirmation: bool = False,
                 confirmations: ConfirmationRequests | None = None,
                 subscribed: SubscribedQueues | None = None,
                 webhooks: Webhooks | None = None) -> None:
        self.limits = limits
        # [notifications] allowed_hosts, when it lists hosts: a webhook it
        # can never allow is refused here rather than failing every attempt.
        self.webhooks = webhooks
        self.pools = pools
        # The posts' cache of subscribed queues (zq.service.subscribed), told at once
        # of this process's changes.
        self.subscribed = subscribed
        self.require_confirmation = require_confirmation
        self.confirmations = confirmations

    def create(self, project: str, queue: str, document: Any) -> tuple[str, bool]:
        """(id, created): a repeated create of an unconfirmed subscription answers its id.

        As Zaqar: the queue is created when missing; a subscriber already
        subscribed to the queue and confirmed is a SubscriptionConflict.
        """
        queue = validation.queue_name(queue, self.limits)
        checked = posting(document, self.limits)
        assert checked.subscriber is not None
        self._check_reachable(checked.subscriber)
        ttl = self.limits.default_subscription_ttl if checked.ttl is None else checked.ttl
        storage = self.pools.place(project, queue)
        if not storage.queues.exists(project, queue):
            storage.queues.create(project, queue, {})
        # Twice at most: the subscription that made the first attempt fail
        # may expire or be deleted before it is read.
        for _ in range(2):
            sid = new_subscription_id()
            _start_notifications(storage, sid)
            created = storage.subscriptions.create(
                project, queue, checked.subscriber, ttl, checked.options or {},
                subscription_id=sid)
            self._changed(project, queue)
            if created is None:
                storage.notification_cursors.forget(sid)  # not made: its cursor goes too
            if created is not None:
                self._ask_confirmation(storage.subscriptions.get(project, queue, created))
                return created, True
            existing = storage.subscriptions.find(project, queue, checked.subscriber)
            if existing is None:
                continue
            if existing.confirmed:
                raise SubscriptionConflict.duplicate()
            self._ask_confirmation(existing)
            return existing.id, False
        raise SubscriptionConflict.duplicate()

    def get(self, project: str, queue: str, subscription_id: str) -> SubscriptionRecord:
        queue = validation.queue_name(queue, self.limits)
        if not _id_shaped(subscription_id):
            raise SubscriptionNotFound.gone(subscription_id)
        return self._storage(project, queue).subscriptions.get(project, queue, subscription_id)

    def list(
        self, project: str, queue: str, *, marker: str | None = None, limit: int | None = None
    ) -> list[SubscriptionRecord]:
        """A page by id after ``marker`` (Zaqar's default page: 10)."""
        queue = validation.queue_name(queue, self.limits)
        high = self.limits.max_subscriptions_per_page
        if limit is not None and not 0 < limit <= high:
            raise InvalidRequest(
                f"Limit must be at least 1 and may not be greater than {high}.")
        size = self.limits.default_page_size if limit is None else limit
        if marker is not None and (len(marker) > 64
                                   or validation.CONTROL_CHARACTERS.search(marker)):
            # Not a marker zq gave: past every id, an empty page.
            return []
        return self._storage(project, queue).subscriptions.list(
            project, queue, marker=marker, limit=size)

    def update(self, project: str, queue: str, subscription_id: str, document: Any) -> None:
        queue = validation.queue_name(queue, self.limits)
        checked = patching(document, self.limits)
        if checked.subscriber is not None:
            self._check_reachable(checked.subscriber)
        if not _id_shaped(subscription_id):
            raise SubscriptionNotFound.gone(subscription_id)
        self._storage(project, queue).subscriptions.update(
            project, queue, subscription_id, subscriber=checked.subscriber, ttl=checked.ttl,
            options=checked.options)

    def delete(self, project: str, queue: str, subscription_id: str) -> None:
        """No error when it does not exist (204, as Zaqar)."""
        queue = validation.queue_name(queue, self.limits)
        if _id_shaped(subscription_id):
            self._storage(project, queue).subscriptions.delete(project, queue, subscription_id)
            self._changed(project, queue)

    def confirm(self, project: str, queue: str, subscription_id: str, document: Any) -> None:
        queue = validation.queue_name(queue, self.limits)
        confirmed = confirming(document)
        if not _id_shaped(subscription_id):
            raise SubscriptionNotFound.gone(subscription_id)
        subscriptions = self._storage(project, queue).subscriptions
        subscriptions.confirm(project, queue, subscription_id, confirmed=confirmed)
        if not confirmed:
            self._ask_confirmation(subscriptions.get(project, queue, subscription_id),
                                   unsubscribed=True)

    def _check_reachable(self, subscriber: str) -> None:
        if self.webhooks is None or urlparse(subscriber).scheme not in ("http", "https"):
            return
        why = self.webhooks.never(subscriber)
        if why is not None:
            raise InvalidRequest(f"The subscriber {subscriber!r} can never be notified: {why} "
                                 "([notifications] allowed_hosts).")

    def _storage(self, project: str, queue: str) -> Storage:
        return self.pools.storage_for(project, queue)

    def _changed(self, project: str, queue: str) -> None:
        if self.subscribed is not None:
            self.subscribed.forget(project, queue)

    def _ask_confirmation(self, subscription: SubscriptionRecord, *,
                          unsubscribed: bool = False) -> None:
        # Zaqar sends confirmation requests only with require_confirmation.
        if self.require_confirmation and self.confirmations is not None:
            self.confirmations.request(subscription, unsubscribed=unsubscribed)
