"""How far the event log may be trimmed without losing a subscription's notification.

``zq events export`` trims the log after writing it out; events a live
subscription has not yet been notified of must stay (docs/analytics.md).
A live subscription without a cursor (the notifier has not started on
it) keeps the whole log: it may still need any event since it was made.
"""

from __future__ import annotations

from zq.notifications.subscriptions import subscriptions_of
from zq.storage.base import Storage


def trim_bound(storage: Storage, up_to: str) -> str | None:
    """The cursor to trim to instead of ``up_to`` (None: trim nothing)."""
    controller = subscriptions_of(storage)
    cursors = getattr(storage, "notification_cursors", None)  # a bare log has none
    if controller is None or cursors is None:
        return up_to
    live = controller.live()
    if not live:
        return up_to
    positions = cursors.positions()
    bound = up_to
    for subscription in live:
        cursor = positions.get(subscription.id)
        if cursor is None:
            return None
        if storage.events.sort_key(cursor) < storage.events.sort_key(bound):
            bound = cursor
    return bound


def trim(storage: Storage, up_to: str) -> int:
    """``storage.events.trim`` up to ``up_to`` or the subscriptions' bound, whichever is first."""
    bound = trim_bound(storage, up_to)
    return 0 if bound is None else storage.events.trim(up_to=bound)
