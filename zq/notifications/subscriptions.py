"""What the notifier reads of a subscription, and where it finds them.

The subscription API (SubscriptionController, on a Storage as
``subscriptions``) stores them; the notifier only reads ``live()``.
"""

from __future__ import annotations

from typing import Any, Protocol

from zq.errors import SubscriptionNotFound
from zq.storage.base import Storage


class Subscription(Protocol):
    """One subscription as the notifier needs it (SubscriptionRecord has these)."""

    id: str
    project: str
    queue: str
    subscriber: str  # http(s)://... or mailto:...
    ttl: int
    expires: float
    options: dict[str, Any]
    confirmed: bool
    age: float  # seconds since it was created


class Subscriptions(Protocol):
    """The part of SubscriptionController the notifier uses."""

    def live(self) -> list[Any]:
        """Every subscription of the backend that has not expired."""

    def get(self, project: str, queue: str, subscription_id: str) -> Any:
        """The subscription as stored now; SubscriptionNotFound once it is gone."""


def subscriptions_of(storage: Storage) -> Subscriptions | None:
    """The backend's subscriptions, None when its driver stores none."""
    return getattr(storage, "subscriptions", None)


def reread(storage: Storage, subscription: Subscription) -> Subscription | None:
    """``subscription`` as stored now (confirmed or changed since); None once it is gone.

    Gone means deleted or expired: ``get`` answers what the API answers,
    so a DELETE answered before this read is seen by it, on any server.
    """
    controller = subscriptions_of(storage)
    if controller is None:
        return subscription
    try:
        found: Subscription = controller.get(subscription.project, subscription.queue,
                                             subscription.id)
    except SubscriptionNotFound:
        return None
    return found
