"""What the notifier reads of a subscription, and where it finds them.

The subscription API (SubscriptionController, on a Storage as
``subscriptions``) stores them; the notifier only reads ``live()``.
"""

from __future__ import annotations

from typing import Any, Protocol

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


def subscriptions_of(storage: Storage) -> Subscriptions | None:
    """The backend's subscriptions, None when its driver stores none."""
    return getattr(storage, "subscriptions", None)
