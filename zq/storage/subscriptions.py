"""The storage contract of subscriptions (Zaqar v2's notifications).

Storage.subscriptions of every driver; zq.subscriptions holds the rules of
the API above it, the notifier (zq.notifications) reads ``for_queue`` and
``live``.
"""

from __future__ import annotations

import hashlib
import uuid
from abc import ABC, abstractmethod
from typing import Any

from zq.storage.records import SubscriptionRecord


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
