"""Notification cursors: where each subscription's deliveries have got to, under a lease.

The notifier (zq.notifications) reads the event log once per subscription,
from that subscription's cursor. Several ``zq serve`` processes or hosts on
one backend share the cursors through the backend itself: whoever holds a
subscription's *lease* delivers its events and moves its cursor; the others
leave it alone until the lease runs out (its holder crashed or hung). No
cluster protocol of our own: the lease is one conditional write.

At least once: the cursor moves only after the events before it were
delivered (or given up on), so a holder that dies mid-delivery leaves its
cursor behind the events it was sending, and the next holder sends them
again. Exactly once per subscriber while every holder lives: a live holder
renews its lease (each ``advance`` and ``acquire``) before it runs out.

Lease times come from the storage's clock: hosts whose clocks differ by more
than a fraction of the lease can both believe they hold it (documented in
docs/notifications.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class CursorLease:
    """A subscription's cursor, held by ``owner`` until ``until``."""

    subscription_id: str
    cursor: str | None  # the last event handled; None: nothing yet (read from the log's start)
    owner: str
    until: float


class NotificationCursors(ABC):
    """One backend's notification cursors and their leases."""

    @abstractmethod
    def acquire(self, subscription_id: str, owner: str, lease_seconds: float) -> CursorLease | None:
        """Take (or renew) the lease unless another owner holds one that has not run out.

        A subscription without a cursor yet gets one (cursor None). Returns
        None when another owner holds the lease.
        """

    @abstractmethod
    def start(self, subscription_id: str, cursor: str) -> None:
        """A new subscription's first cursor, held by nobody; nothing when it has a row.

        Written before the subscription is stored (zq.subscriptions), so
        the notifier never finds the subscription without it and starts at
        ``cursor`` (the log's end then) rather than at the log's start.
        """

    @abstractmethod
    def advance(self, subscription_id: str, owner: str, cursor: str, lease_seconds: float) -> bool:
        """Store ``cursor`` and renew the lease, if ``owner`` still holds it.

        False (nothing written) when another owner has taken the lease since;
        the caller then stops delivering that subscription. An owner whose
        lease ran out but was taken by nobody still holds it.
        """

    @abstractmethod
    def release(self, subscription_id: str, owner: str) -> None:
        """Give the lease up (at shutdown), keeping the cursor; a no-op for a non-holder."""

    @abstractmethod
    def positions(self) -> dict[str, str | None]:
        """Every stored cursor by subscription id (None: nothing handled yet)."""

    @abstractmethod
    def forget(self, subscription_id: str) -> None:
        """Remove a subscription's cursor (the subscription is gone)."""
