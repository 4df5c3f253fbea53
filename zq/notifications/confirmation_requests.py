"""The state of confirmation requests, shared by the API and the notifier.

Each request is a notification cursor row ``confirm:<subscription id>``
(zq.notifications.confirmations explains the states). The API only writes
here (``StoredRequests``, the ``ConfirmationRequests`` of zq.subscriptions);
the notifier sends. Kept apart from the sending code so the API imports
no HTTP client.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from zq.storage.base import Storage
from zq.storage.cursors import NotificationCursors

log = logging.getLogger("zq.notifications")

PREFIX = "confirm:"
UNSUBSCRIBE = "unsubscribe"
SENT = "sent"
GIVEN_UP = "given-up"
DONE = (SENT, GIVEN_UP)


def key(subscription_id: str) -> str:
    """The cursor row of a subscription's confirmation request."""
    return PREFIX + subscription_id


class StoredRequests:
    """The API's ``ConfirmationRequests``: records a request for the notifier.

    Writes one row (no subscriber is contacted on the request thread).
    """

    def __init__(self, storage_for: Callable[[str, str], Storage]) -> None:
        self._storage_for = storage_for

    def request(self, subscription: Any, *, unsubscribed: bool) -> None:
        cursors = self._storage_for(subscription.project, subscription.queue)\
            .notification_cursors
        if cursors is None:
            return
        mark(cursors, subscription.id, unsubscribed=unsubscribed)


def mark(cursors: NotificationCursors, subscription_id: str, *, unsubscribed: bool) -> None:
    """Make a new request due: no row asks for a confirmation request; an
    unsubscribe notice needs the row's state (written under a lease of our own)."""
    row = key(subscription_id)
    cursors.forget(row)  # a holder mid-send fails its advance and the request stands
    if not unsubscribed:
        return
    owner = "api-" + uuid.uuid4().hex
    for _ in range(3):
        if cursors.acquire(row, owner, 30.0) is not None:
            cursors.advance(row, owner, UNSUBSCRIBE, 30.0)
            cursors.release(row, owner)
            return
        cursors.forget(row)  # the notifier took the new row first: ours wins
    log.warning("subscription %s: the unsubscribe notice could not be recorded; a "
                "confirmation request is sent instead", subscription_id)
