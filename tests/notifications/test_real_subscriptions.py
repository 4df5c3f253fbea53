"""The notifier over each driver's own SubscriptionController (not the tests' fake)."""

from __future__ import annotations

import pytest

from tests.notifications.helpers import Counts, config, drain, notifier, receiver
from tests.notifications.test_delivery import post
from zq.clock import ManualClock
from zq.notifications import runner
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
        for _ in range(2):  # the refresh, and gone cursors found gone twice in a row
            clock.advance(61)
            drain(server)
        assert [r.json()["body"] for r in hook.received] == ["one"]
        assert sub not in storage.notification_cursors.positions()


def test_nothing_is_sent_to_a_subscription_once_its_delete_is_answered(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        clock.advance(3)
        gone = storage.subscriptions.create(project, "unsub", hook.url("/gone"), 3600, {})
        kept = storage.subscriptions.create(project, "unsub", hook.url("/kept"), 3600, {})
        assert gone is not None and kept is not None
        clock.advance(1)
        post(storage, project, "unsub", "one")
        server = notifier(storage, clock, config(hook.port))
        drain(server)
        storage.subscriptions.delete(project, "unsub", gone)
        # The notifier's list of subscriptions is not read again (the clock
        # stands still): the pump itself must see the DELETE.
        post(storage, project, "unsub", "two")
        drain(server)
        assert [r.json()["body"] for r in hook.on("/gone")] == ["one"]
        assert [r.json()["body"] for r in hook.on("/kept")] == ["one", "two"]


def test_a_subscription_deleted_while_it_waits_for_a_retry_gets_no_retry(
        storage: Storage, clock: ManualClock, project: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The notifier's list of subscriptions stays as first read: the pump decides.
    monkeypatch.setattr(runner, "REFRESH_EVERY", 3600.0)
    with receiver() as hook:
        hook.statuses["/down"] = 503
        clock.advance(3)
        policy = {"retries_with_no_delay": 0, "minimum_delay_retries": 2, "minimum_delay": 5,
                  "maximum_delay": 5, "maximum_delay_retries": 0}
        sub = storage.subscriptions.create(project, "unsub-retry", hook.url("/down"), 3600,
                                           {"_retry_policy": policy})
        assert sub is not None
        clock.advance(1)
        post(storage, project, "unsub-retry", "one")
        server = notifier(storage, clock, config(hook.port))
        drain(server)
        assert len(hook.on("/down")) == 1  # the attempt; a retry is due in 5 s
        storage.subscriptions.delete(project, "unsub-retry", sub)
        clock.advance(5)
        drain(server)
        assert len(hook.on("/down")) == 1


def test_a_new_subscriptions_notifications_start_at_the_logs_end(
        storage: Storage, clock: ManualClock, project: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its first notification must not wait for a read of the whole log."""
    from zq.config import Limits
    from zq.pooling import SingleBackend
    from zq.subscriptions import SubscriptionService

    service = SubscriptionService(Limits(), SingleBackend(storage))
    with receiver() as hook:
        post(storage, project, "fresh", "before")
        end = storage.events.end()
        clock.advance(3)
        sid, created = service.create(project, "fresh", {"subscriber": hook.url("/fresh")})
        assert created
        assert storage.notification_cursors is not None
        assert storage.notification_cursors.positions()[sid] == end
        clock.advance(1)
        post(storage, project, "fresh", "after")
        reads: list[str | None] = []
        read = storage.events.read

        def recorded(*, after: str | None = None, limit: int = 1000) -> list:  # type: ignore[type-arg]
            reads.append(after)
            return read(after=after, limit=limit)

        monkeypatch.setattr(storage.events, "read", recorded)
        drain(notifier(storage, clock, config(hook.port)))
        assert [r.json()["body"] for r in hook.on("/fresh")] == ["after"]
        assert reads and reads[0] == end  # never from the log's start


def test_a_repeated_create_keeps_the_first_cursor_and_leaves_no_stray_row(
        storage: Storage, clock: ManualClock, project: str) -> None:
    from zq.config import Limits
    from zq.pooling import SingleBackend
    from zq.subscriptions import SubscriptionService

    service = SubscriptionService(Limits(), SingleBackend(storage))
    post(storage, project, "again", "x")
    sid, _ = service.create(project, "again", {"subscriber": "http://127.0.0.1:9/a"})
    assert storage.notification_cursors is not None
    before = set(storage.notification_cursors.positions())
    post(storage, project, "again", "y")
    again, created = service.create(project, "again", {"subscriber": "http://127.0.0.1:9/a"})
    assert (again, created) == (sid, False)
    assert set(storage.notification_cursors.positions()) == before
