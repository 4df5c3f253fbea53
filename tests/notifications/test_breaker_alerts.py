"""Breaker alerts: a queue's subscribers hear when its breaker trips and closes.

The steps in between (half-open after a good probe, open again after a
failed one) are not news; with ``aggregate_seconds`` the alerts of a window
are counted per kind, as dead letter alerts are.
"""

from __future__ import annotations

import pytest

from tests.api.helpers import Api
from tests.notifications.helpers import (
    FakeSubscription,
    attach,
    config,
    drain,
    notifier,
    receiver,
)
from tests.notifications.test_delivery import sub_id
from zq import events
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config
from zq.notifications.payloads import AUTO_REDRIVE_SETTLE, build
from zq.poison import breaker
from zq.storage.base import Storage
from zq.storage.records import Event

ON = {breaker.FAILURE_RATIO: 0.5}
POLICY = breaker.policy_from_metadata(ON)


def transition(cursor: int, time: float, state: str, previous: str, *, queue: str = "work",
               description: str | None = "db down", forced: bool = False) -> Event:
    return Event(str(cursor), time, "p", queue, events.BREAKER,
                 detail=events.breaker_detail(state, previous, description, 30, 2,
                                              forced=forced))


def subscription(**options: object) -> FakeSubscription:
    return FakeSubscription("s", "p", "work", "http://hook", options=dict(options))


def test_trips_and_closes_are_alerts_and_the_steps_between_are_not() -> None:
    log = [
        transition(1, 100.0, breaker.OPEN, breaker.CLOSED),
        transition(2, 105.0, breaker.HALF_OPEN, breaker.OPEN),  # a good probe
        transition(3, 106.0, breaker.OPEN, breaker.HALF_OPEN),  # a failed one
        transition(4, 107.0, breaker.OPEN, breaker.CLOSED, queue="other"),
        transition(5, 120.0, breaker.CLOSED, breaker.HALF_OPEN, description=None),
    ]
    batch = build(log, subscription(), now=200.0, created=0.0, fetch=lambda *a: None)
    assert batch.through == "5"  # every event accounted for, alert or not
    tripped, closed = (n.payload for n in batch.notifications)
    assert tripped == {
        "queue_name": "work", "Message_Type": "Notification", "breaker": "tripped",
        "state": "open", "previous": "closed", "time": "1970-01-01T00:01:40Z",
        "description": "db down", "failures": 30, "successes": 2, "forced": False}
    assert (closed["breaker"], closed["state"], closed["previous"]) == (
        "closed", "closed", "half-open")
    assert {n.kind for n in batch.notifications} == {"breaker"}


def test_aggregate_seconds_counts_trips_and_closes_per_window() -> None:
    log = [
        transition(1, 60.0, breaker.OPEN, breaker.CLOSED, description="db down"),
        transition(2, 70.0, breaker.CLOSED, breaker.OPEN, forced=True),
        transition(3, 80.0, breaker.OPEN, breaker.CLOSED, description="db gone"),
        transition(4, 90.0, breaker.CLOSED, breaker.HALF_OPEN),
        transition(5, 130.0, breaker.OPEN, breaker.CLOSED),  # the next window, still open
    ]
    batch = build(log, subscription(aggregate_seconds=60), now=150.0, created=0.0,
                  fetch=lambda *a: None)
    assert batch.through == "4"  # waits before the window that has not closed
    tripped, closed = (n.payload for n in batch.notifications)
    assert (tripped["breaker"], tripped["count"], tripped["forced"]) == ("tripped", 2, 0)
    assert tripped["description"] == "db gone" and tripped["state"] == "open"
    assert (tripped["window_start"], tripped["window_end"]) == (60.0, 120.0)
    assert (closed["breaker"], closed["count"], closed["forced"]) == ("closed", 2, 1)
    assert {n.kind for n in batch.notifications} == {"breaker_aggregate"}


def test_a_forced_trip_and_close_reach_the_queues_subscribers(
        storage: Storage, clock: ManualClock, project: str) -> None:
    if not storage.has_breaker:
        pytest.skip("this driver has no breaker yet")
    subs = attach(storage)
    with receiver() as hook:
        storage.queues.create(project, "guarded", dict(ON))
        subs.add(sub_id(), project, "guarded", hook.url("/guarded"))
        subs.add(sub_id(), project, "elsewhere", hook.url("/elsewhere"))
        # Within the 2 s a fake subscription's creation may be early by
        # (zq.notifications.pump.created_at): both are the subscription's news.
        storage.breakers.force(project, "guarded", breaker.OPEN, POLICY, clock.now())
        # The notifier dates a subscription from when it first reads it.
        sender = notifier(storage, clock, config(hook.port))
        drain(sender)
        clock.advance(1)
        storage.breakers.force(project, "guarded", breaker.CLOSED, POLICY, clock.now())
        clock.advance(AUTO_REDRIVE_SETTLE)  # a close alert waits for its auto-redrive
        drain(sender)
        alerts = [r.json() for r in hook.on("/guarded")]
        assert [(a["breaker"], a["state"], a["forced"]) for a in alerts] == [
            ("tripped", "open", True), ("closed", "closed", True)]
        assert alerts[1]["auto_redriven"] == 0  # nothing was dead lettered
        assert {a["Message_Type"] for a in alerts} == {"Notification"}
        assert hook.on("/elsewhere") == []


def redriven(cursor: int, time: float, *, to: str = "work", reason: str = "auto_redriven",
             project: str = "p") -> Event:
    return Event(str(cursor), time, project, "work-dlq", events.REDRIVEN,
                 message_id=f"m{cursor}", detail={"to": to, "reason": reason})


def test_a_close_alert_counts_what_its_auto_redrive_sent_back() -> None:
    log = [
        transition(1, 100.0, breaker.CLOSED, breaker.HALF_OPEN),
        redriven(2, 100.1), redriven(3, 100.2),
        redriven(4, 100.2, reason="redriven"),  # an operator's redrive: not counted
        redriven(5, 100.3, to="other"), redriven(6, 100.3, project="q"),
        redriven(7, 100.0 + AUTO_REDRIVE_SETTLE + 1),  # after the settle: another story
    ]
    # The close is younger than the settle: it waits, and the cursor with it.
    waiting = build(log, subscription(), now=102.0, created=0.0, fetch=lambda *a: None)
    assert (waiting.notifications, waiting.through) == ([], None)
    batch = build(log, subscription(), now=110.0, created=0.0, fetch=lambda *a: None)
    [closed] = [n.payload for n in batch.notifications if n.kind == "breaker"]
    assert (closed["breaker"], closed["auto_redriven"]) == ("closed", 2)


def test_an_aggregated_close_alert_sums_the_auto_redriven() -> None:
    log = [
        transition(1, 60.0, breaker.OPEN, breaker.CLOSED),
        transition(2, 70.0, breaker.CLOSED, breaker.HALF_OPEN),
        redriven(3, 70.5), redriven(4, 71.0),
        transition(5, 80.0, breaker.OPEN, breaker.CLOSED),
        transition(6, 90.0, breaker.CLOSED, breaker.OPEN, forced=True),
        redriven(7, 91.0),
    ]
    batch = build(log, subscription(aggregate_seconds=60), now=150.0, created=0.0,
                  fetch=lambda *a: None)
    tripped, closed = (n.payload for n in batch.notifications if n.kind == "breaker_aggregate")
    assert "auto_redriven" not in tripped
    assert (closed["count"], closed["auto_redriven"]) == (2, 3)


def test_a_trip_by_rejects_through_the_api_alerts_with_the_shared_failure(
        storage: Storage, clock: ManualClock, project: str) -> None:
    """The whole path: rejects over HTTP, the driver's trip in the reject's
    step, its event, the notifier, the webhook (the driver's own subscriptions)."""
    if not storage.has_breaker:
        pytest.skip("this driver has no breaker yet")
    api = Api(create_app(Config(), storage=storage, clock=clock), project)
    with receiver() as hook:
        clock.advance(3)  # younger than any earlier test's events
        settings = {**ON, breaker.MIN_FAILURES: 2}
        assert api.put("/v2/queues/tripping", json=settings).status_code == 201
        assert storage.subscriptions.create(project, "tripping", hook.url("/t"), 3600, {})
        clock.advance(1)
        api.post_messages("tripping", *({"body": n, "ttl": 600} for n in range(3)))
        claim = api.claim("tripping", limit=3)
        claim_id = claim.headers["location"].rsplit("/", 1)[1]
        for message in claim.json["messages"][:2]:
            assert api.post(f"/v2/queues/tripping/messages/{message['id']}/reject",
                            params={"claim_id": claim_id},
                            json={"description": "db down", "retry_after": 0}).status_code == 204
        drain(notifier(storage, clock, config(hook.port)))
        [alert] = [r.json() for r in hook.on("/t") if "breaker" in r.json()]
        assert (alert["breaker"], alert["state"], alert["previous"]) == (
            "tripped", "open", "closed")
        assert alert["description"] == "db down" and alert["forced"] is False
        assert alert["failures"] == 2 and alert["successes"] == 0
