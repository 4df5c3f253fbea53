"""How far the event log may be trimmed without losing a subscription's notification.

``zq events export`` trims the log after writing it out; events a live
subscription has not yet been notified of stay (docs/analytics.md), but
no subscription holds the log for long, and none holds what is not its
business:

- one with a cursor holds the events after it, except those older than
  ``hold_seconds`` (default a day): a subscriber that has failed for that
  long, or a notifier that has been down that long, no longer keeps every
  tenant's log (a subscription lives up to 2^31 s); the events it loses
  are reported;
- one without a cursor (made before new subscriptions got one at create,
  zq.subscriptions, and not started on yet) holds only the events since it
  was made, within the same bound, not the whole log.

Not the retry policy's end: a healthy subscriber with a backlog is behind
by more than its retries take, and must not lose notifications for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from zq.notifications.subscriptions import Subscription, subscriptions_of
from zq.storage.base import Storage

log = logging.getLogger("zq.notifications")

# Seconds an event may be held back from the trim for a subscription that
# has not been notified of it (``zq events export --subscription-hold``).
HOLD_SECONDS = 86400.0
# Events read at a time while looking for the first one a subscription holds.
PAGE = 1000

Report = Callable[[str], None]


def made_at(subscription: Subscription, now: float) -> float:
    """When the subscription was made, erring early (holding more, never less)."""
    return min(float(subscription.expires) - float(subscription.ttl),
               now - float(subscription.age) - 2.0)


def trim_bound(storage: Storage, up_to: str, *, now: float,
               hold_seconds: float = HOLD_SECONDS, report: Report | None = None) -> str | None:
    """The cursor to trim to instead of ``up_to`` (None: trim nothing)."""
    controller = subscriptions_of(storage)
    cursors = getattr(storage, "notification_cursors", None)  # a bare log has none
    if controller is None or cursors is None:
        return up_to
    live = controller.live()
    if not live:
        return up_to
    positions = cursors.positions()
    key = storage.events.sort_key
    bound: str | None = up_to
    oldest_held = now - hold_seconds
    for subscription in live:
        cursor = positions.get(subscription.id)
        if cursor is not None and key(cursor) >= key(up_to):
            continue  # notified of everything up to the trim
        owed_from = float("-inf") if cursor is not None else made_at(subscription, now)
        held_after, lost = _held_after(storage, cursor, max(oldest_held, owed_from), owed_from,
                                       up_to)
        if lost:
            message = (f"subscription {subscription.id} of {subscription.project}/"
                       f"{subscription.queue} is more than {hold_seconds:g} s behind: {lost} "
                       "events it was not notified of are trimmed")
            log.warning("%s", message)
            if report is not None:
                report(message)
        if held_after is None:
            return None
        if bound is None or key(held_after) < key(bound):
            bound = held_after
    return bound


def _held_after(storage: Storage, cursor: str | None, since: float, owed_from: float,
                up_to: str) -> tuple[str | None, int]:
    """(the cursor just before the first event at or after ``since``, up to ``up_to``;
    how many events from ``owed_from`` on it passes).

    Walks the log after ``cursor``; usually one event (a subscription only
    a little behind holds from its cursor).
    """
    key = storage.events.sort_key
    limit = 1
    lost = 0
    while True:
        events = storage.events.read(after=cursor, limit=limit)
        for event in events:
            if event.time >= since or key(event.cursor) > key(up_to):
                return cursor, lost
            lost += event.time >= owed_from
            cursor = event.cursor
        if len(events) < limit:
            return cursor, lost
        limit = PAGE


def trim(storage: Storage, up_to: str, *, now: float, hold_seconds: float = HOLD_SECONDS,
         report: Report | None = None) -> int:
    """``storage.events.trim`` up to ``up_to`` or the subscriptions' bound, whichever is first."""
    bound = trim_bound(storage, up_to, now=now, hold_seconds=hold_seconds, report=report)
    return 0 if bound is None else storage.events.trim(up_to=bound)
