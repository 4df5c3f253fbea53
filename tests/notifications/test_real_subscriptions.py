"""The notifier over each driver's own SubscriptionController (not the tests' fake)."""

from __future__ import annotations

from tests.notifications.helpers import Counts, config, drain, notifier, receiver
from tests.notifications.test_delivery import post
from zq.clock import ManualClock
from zq.storage.base import Storage


def test_the_drivers_subscriptions_are_notified_and_deleted_ones_forgotten(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        clock.advance(3)  # younger than any earlier test's events
        sub = storage.subscriptions.create(project, "real", hook.url("/real"), 3600,
                                           {"secret": "k"})
        assert sub is not None
        clock.advance(1)
        post(storage, project, "real", "one")
        counts = Counts()
        server = notifier(storage, clock, config(hook.port), counts=counts)
        drain(server)
        assert [r.json()["body"] for r in hook.received] == ["one"]
        assert hook.received[0].headers["X-Zq-Signature"].startswith("sha256=")
        assert storage.notification_cursors is not None
        assert sub in storage.notification_cursors.positions()
        storage.subscriptions.delete(project, "real", sub)
        post(storage, project, "real", "two")
        clock.advance(61)  # the refresh and the forgetting of gone cursors
        drain(server)
        assert [r.json()["body"] for r in hook.received] == ["one"]
        assert sub not in storage.notification_cursors.positions()
