"""Which events a subscription hears about, and the notification each becomes.

- ``posted`` in the subscribed queue, and ``redriven`` into it: Zaqar's
  notification of a posted message, ``{"body", "ttl", "queue_name",
  "Message_Type": "Notification"}``, one per message (one POST, or mail, each).
- ``dead_lettered`` into it (a dead letter queue: reasons max_claim_count,
  rejected, expired): a dead letter alert, the message's notification plus
  ``message_id``, ``from`` (the source queue), ``reason``, ``claim_count``,
  ``description``, ``fingerprint`` and the ``history`` clients see.
- ``breaker`` in the subscribed queue, when it trips (leaves closed) or
  closes (zq.poison.breaker_alerts): a breaker alert, ``{"queue_name",
  "breaker": "tripped"|"closed", "state", "previous", "time",
  "description", "failures", "successes", "forced"}``; a close also says
  how many dead letters the automatic redrive sent back
  (``auto_redriven``: the ``redriven`` events of reason ``auto_redriven``
  into the queue in the ``AUTO_REDRIVE_SETTLE`` seconds after the close,
  which the alert waits for; zq.poison.auto_redrive).
- With the subscription option ``aggregate_seconds`` N > 0, dead letter
  alerts are grouped per (source queue, reason, fingerprint) and N-second
  window (aligned on multiples of N): one notification per group with
  ``count``, the first few ``message_ids`` and the window; breaker alerts
  per (``tripped`` or ``closed``) and window, with ``count``, ``forced``
  (how many of them were forced), the latest one's state and
  description, and for closes the sum of their ``auto_redriven``. A
  window is sent once it has closed; until then the subscription's cursor
  waits before its first event, so a crash re-reads (and re-sends) it.

Every notification carries Zaqar's ``"Message_Type": "Notification"``
(alerts too): a receiver written for Zaqar tells them from confirmation
requests by it.

Events older than the subscription are not its business.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from zq import events
from zq.notifications.subscriptions import Subscription
from zq.poison import breaker_alerts
from zq.poison.history import compact_history, iso8601
from zq.poison.moves import REASON_AUTO_REDRIVEN
from zq.storage.records import Event, MessageRecord

MESSAGE = "message"
DEAD_LETTER = "dead_letter"
AGGREGATE = "dead_letter_aggregate"
BREAKER = "breaker"
BREAKER_AGGREGATE = "breaker_aggregate"
# How many message ids an aggregated alert lists.
AGGREGATE_IDS = 5
# Seconds a close alert waits for the automatic redrive its close starts
# (the closing request runs it right after the close) and counts its moves.
AUTO_REDRIVE_SETTLE = 5.0
# Zaqar's key and value that mark a notification (zaqar/notification/notifier.py's
# MessageType; confirmation requests carry the other values).
MESSAGE_TYPE = "Message_Type"
NOTIFICATION = "Notification"

# (project, queue, message id) -> the message with its body opened, or None when gone.
Fetch = Callable[[str, str, str], MessageRecord | None]
# (project, message id, body as stored) -> the body's JSON text (a sealed one opened).
Opener = Callable[[str, str, str], str]


def _as_stored(project: str, message_id: str, stored: str) -> str:
    return stored


@dataclass
class Notification:
    kind: str
    payload: dict[str, Any]
    message_ids: list[str] = field(default_factory=list)


def aggregate_seconds(subscription: Subscription) -> float:
    value = subscription.options.get("aggregate_seconds")
    return float(value) if isinstance(value, int | float) and value > 0 else 0.0


def kind_for(event: Event, subscription: Subscription) -> str | None:
    """What ``event`` is to ``subscription``: MESSAGE, DEAD_LETTER, BREAKER or None (nothing)."""
    if event.project != subscription.project:
        return None
    if event.kind == events.POSTED and event.queue == subscription.queue:
        return MESSAGE
    if event.kind == events.BREAKER:
        news = breaker_alerts.alert_of(event.detail) is not None
        return BREAKER if news and event.queue == subscription.queue else None
    if event.detail.get(events.TO) != subscription.queue:
        return None
    if event.kind == events.REDRIVEN:
        return MESSAGE
    if event.kind == events.DEAD_LETTERED:
        return DEAD_LETTER
    return None


def _body(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text  # a sample cut short: the text as it is


def message_payload(event: Event, subscription: Subscription, fetch: Fetch,
                    opener: Opener = _as_stored) -> dict[str, Any]:
    """Zaqar's notification of a message now in the subscribed queue.

    A post to a queue with subscriptions carries its body in the event
    (zq.service.subscribed): no read of the queue, whose consumer may have taken
    the message already. Otherwise (posted within seconds of a subscription
    made by another process, a redrive) the queue is read: body None when
    the message has gone.
    """
    stored = event.detail.get(events.BODY)
    if isinstance(stored, str):
        return {"body": _body(opener(subscription.project, event.message_id or "", stored)),
                "ttl": event.detail.get(events.TTL), "queue_name": subscription.queue,
                MESSAGE_TYPE: NOTIFICATION}
    record = fetch(subscription.project, subscription.queue, event.message_id or "")
    ttl = record.ttl if record is not None else event.detail.get(events.TTL)
    return {"body": _body(record.body if record else None), "ttl": ttl,
            "queue_name": subscription.queue, MESSAGE_TYPE: NOTIFICATION}


def dead_letter_payload(event: Event, subscription: Subscription, fetch: Fetch) -> dict[str, Any]:
    """A dead letter alert: the message plus where from, why, and its history."""
    record = fetch(subscription.project, subscription.queue, event.message_id or "")
    detail = event.detail
    return {
        "body": _body(record.body if record else detail.get(events.SAMPLE)),
        "ttl": record.ttl if record else None,
        "queue_name": subscription.queue,
        MESSAGE_TYPE: NOTIFICATION,
        "message_id": event.message_id,
        "from": event.queue,
        "reason": detail.get(events.REASON),
        "claim_count": event.claim_count,
        "description": detail.get(events.DESCRIPTION),
        "fingerprint": detail.get(events.FINGERPRINT),
        "history": compact_history(record.history) if record else [],
    }


def auto_redriven(close: Event, later: Sequence[Event], subscription: Subscription) -> int:
    """The dead letters sent back to the subscribed queue within the settle after ``close``."""
    end = close.time + AUTO_REDRIVE_SETTLE
    return sum(1 for event in later
               if event.kind == events.REDRIVEN and event.project == close.project
               and event.detail.get(events.TO) == subscription.queue
               and event.detail.get(events.REASON) == REASON_AUTO_REDRIVEN
               and event.time <= end)


def breaker_payload(event: Event, subscription: Subscription,
                    later: Sequence[Event] = ()) -> dict[str, Any]:
    """A breaker alert: tripped or closed, with the failure most deliveries shared.

    ``later``: the events after it (a close counts the auto-redrive's moves there).
    """
    detail = event.detail
    payload = {
        "queue_name": subscription.queue,
        MESSAGE_TYPE: NOTIFICATION,
        "breaker": breaker_alerts.alert_of(detail),
        "state": detail.get(events.STATE),
        "previous": detail.get(events.PREVIOUS),
        "time": iso8601(event.time),
        "description": detail.get(events.DESCRIPTION),
        "failures": detail.get(events.FAILURES),
        "successes": detail.get(events.SUCCESSES),
        "forced": bool(detail.get(events.FORCED)),
    }
    if breaker_alerts.alert_of(detail) == breaker_alerts.CLOSED_AGAIN:
        payload["auto_redriven"] = auto_redriven(event, later, subscription)
    return payload


def _add_to_breaker_group(groups: dict[tuple[str, ...], Notification], out: list[Notification],
                          event: Event, subscription: Subscription, start: float,
                          window: float, later: Sequence[Event]) -> None:
    """Count a breaker alert in its (tripped or closed, window) group; the latest one's
    state and description stand for the group."""
    alert = str(breaker_alerts.alert_of(event.detail))
    key = (BREAKER, alert, str(start))
    group = groups.get(key)
    if group is None:
        group = groups[key] = Notification(BREAKER_AGGREGATE, {
            "queue_name": subscription.queue, MESSAGE_TYPE: NOTIFICATION,
            "breaker": alert, "count": 0, "forced": 0,
            "window_start": start, "window_end": start + window,
        })
        if alert == breaker_alerts.CLOSED_AGAIN:
            group.payload["auto_redriven"] = 0
        out.append(group)
    payload = group.payload
    payload["count"] += 1
    payload["forced"] += int(bool(event.detail.get(events.FORCED)))
    payload["state"] = event.detail.get(events.STATE)
    payload["time"] = iso8601(event.time)
    payload["description"] = event.detail.get(events.DESCRIPTION)
    if alert == breaker_alerts.CLOSED_AGAIN:
        payload["auto_redriven"] += auto_redriven(event, later, subscription)


@dataclass
class Batch:
    notifications: list[Notification]
    # The cursor of the last event these notifications account for (None:
    # none); the subscription's cursor may move there once they are sent.
    through: str | None


def build(batch: Sequence[Event], subscription: Subscription, *, now: float, created: float,
          fetch: Fetch, opener: Opener = _as_stored) -> Batch:
    """The notifications of ``batch`` (log order), up to the first window still open."""
    window = aggregate_seconds(subscription)
    out: list[Notification] = []
    groups: dict[tuple[str, ...], Notification] = {}
    through: str | None = None
    for index, event in enumerate(batch):
        kind = kind_for(event, subscription) if event.time >= created else None
        if kind in (DEAD_LETTER, BREAKER) and window:
            start = math.floor(event.time / window) * window
            if start + window > now:
                break  # its window is still open: wait here (the cursor too)
        if (kind == BREAKER and event.time + AUTO_REDRIVE_SETTLE > now
                and breaker_alerts.alert_of(event.detail) == breaker_alerts.CLOSED_AGAIN):
            break  # the auto-redrive of this close may still be moving: wait for it
        later = batch[index + 1:] if kind == BREAKER else ()
        if kind == BREAKER and window:
            _add_to_breaker_group(groups, out, event, subscription, start, window, later)
        elif kind == BREAKER:
            out.append(Notification(BREAKER, breaker_payload(event, subscription, later)))
        elif kind == DEAD_LETTER and window:
            reason = str(event.detail.get(events.REASON))
            fingerprint = str(event.detail.get(events.FINGERPRINT))
            key = (event.queue, reason, fingerprint, str(start))
            group = groups.get(key)
            if group is None:
                group = groups[key] = Notification(AGGREGATE, {
                    "queue_name": subscription.queue, MESSAGE_TYPE: NOTIFICATION,
                    "from": event.queue, "reason": reason,
                    "fingerprint": fingerprint, "count": 0, "message_ids": [],
                    "window_start": start, "window_end": start + window,
                    "description": event.detail.get(events.DESCRIPTION),
                    "sample": _body(event.detail.get(events.SAMPLE)),
                })
                out.append(group)
            group.payload["count"] += 1
            if len(group.payload["message_ids"]) < AGGREGATE_IDS and event.message_id:
                group.payload["message_ids"].append(event.message_id)
            group.message_ids.append(event.message_id or "")
        elif kind == DEAD_LETTER:
            out.append(Notification(DEAD_LETTER, dead_letter_payload(event, subscription, fetch),
                                    [event.message_id or ""]))
        elif kind == MESSAGE:
            out.append(Notification(MESSAGE, message_payload(event, subscription, fetch, opener),
                                    [event.message_id or ""]))
        through = event.cursor
    return Batch(out, through)
