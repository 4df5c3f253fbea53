"""The notifier on every driver: webhooks from the event log, once per subscriber."""

from __future__ import annotations

import json
import time
import uuid

from tests.notifications.helpers import Counts, attach, config, drain, notifier, receiver
from zq.clock import ManualClock
from zq.events import fingerprint
from zq.storage.base import Storage
from zq.storage.records import NewMessage


def post(storage: Storage, project: str, queue: str, *bodies: object) -> list[str]:
    messages = []
    for body in bodies:
        text = json.dumps(body)
        messages.append(NewMessage(body=text, ttl=300, delay=0, fingerprint=fingerprint(text)))
    return storage.messages.post(project, queue, messages, client_id=None)


def sub_id() -> str:
    return uuid.uuid4().hex


def test_each_post_is_posted_in_zaqars_shape(storage: Storage, clock: ManualClock,
                                             project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        subs.add(sub_id(), project, "orders", hook.url())
        post(storage, project, "orders", {"n": 1}, {"n": 2})
        post(storage, project, "other", {"n": 3})
        counts = Counts()
        drain(notifier(storage, clock, config(hook.port), counts=counts))
        assert [r.json() for r in hook.received] == [
            {"body": {"n": 1}, "ttl": 300, "queue_name": "orders", "Message_Type": "Notification"},
            {"body": {"n": 2}, "ttl": 300, "queue_name": "orders", "Message_Type": "Notification"},
        ]
        assert hook.received[0].headers["Content-Type"] == "application/json"
        assert (counts.sent, counts.failed) == (2, 0)


def test_two_servers_deliver_each_event_once_per_subscriber(
        storage: Storage, clock: ManualClock, project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        for path in ("/a", "/b", "/c"):
            subs.add(sub_id(), project, "twice", hook.url(path))
        post(storage, project, "twice", *range(7))
        one = notifier(storage, clock, config(hook.port), owner="one")
        two = notifier(storage, clock, config(hook.port), owner="two")
        drain(one, two)
        post(storage, project, "twice", *range(7, 10))
        drain(two, one)
        for path in ("/a", "/b", "/c"):
            assert [r.json()["body"] for r in hook.on(path)] == list(range(10))


def test_a_crashed_servers_subscriptions_are_taken_over_at_least_once(
        storage: Storage, clock: ManualClock, project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        subs.add(sub_id(), project, "crash", hook.url())
        post(storage, project, "crash", 1, 2)
        first = notifier(storage, clock, config(hook.port), owner="first")
        drain(first)
        hook.status = 500  # the next read fails and waits for its retries...
        post(storage, project, "crash", 3)
        first.tick()
        drain(first, rounds=1)
        # ... then "first" dies holding the lease; "second" waits for it to run out.
        tried = [r.json()["body"] for r in hook.received].count(3)
        assert tried >= 1
        second = notifier(storage, clock, config(hook.port), owner="second")
        hook.status = 200
        drain(second)
        assert [r.json()["body"] for r in hook.received].count(3) == tried
        clock.advance(31)
        drain(second)
        bodies = [r.json()["body"] for r in hook.received]
        assert bodies[:2] == [1, 2] and bodies.count(3) == tried + 1
        assert bodies.count(1) == 1 and bodies.count(2) == 1


def test_a_failing_subscriber_retries_on_zaqars_schedule_and_never_blocks_others(
        storage: Storage, clock: ManualClock, project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        hook.statuses["/down"] = 503
        policy = {"retries_with_no_delay": 1, "minimum_delay_retries": 1, "minimum_delay": 2,
                  "maximum_delay": 4, "maximum_delay_retries": 1}
        subs.add(sub_id(), project, "flaky", hook.url("/down"), _retry_policy=policy)
        subs.add(sub_id(), project, "flaky", hook.url("/up"))
        post(storage, project, "flaky", "a", "b")
        counts = Counts()
        server = notifier(storage, clock, config(hook.port), counts=counts)
        drain(server)
        assert [r.json()["body"] for r in hook.on("/up")] == ["a", "b"]
        assert len(hook.on("/down")) == 2  # the attempt and the retry with no delay
        clock.advance(2)
        drain(server)
        assert len(hook.on("/down")) == 3  # the minimum delay retry
        clock.advance(2)  # linear backoff from 2 to 4: one step of 5 s -> range(2, 4, 5) = [2]
        drain(server)
        assert len(hook.on("/down")) == 4
        clock.advance(4)  # the maximum delay retry, the last: then given up, on to "b"
        drain(server)
        bodies = [r.json()["body"] for r in hook.on("/down")]
        assert bodies == ["a"] * 5 + ["b"] * 2
        assert (counts.failed, counts.sent) == (7, 2)


def test_nothing_is_sent_until_hosts_are_allowed(storage: Storage, clock: ManualClock,
                                                 project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        subs.add(sub_id(), project, "closed", hook.url(), _retry_policy={
            "retries_with_no_delay": 0, "minimum_delay_retries": 0, "maximum_delay_retries": 0,
            "minimum_delay": 5, "maximum_delay": 5})
        post(storage, project, "closed", 1)
        counts = Counts()
        drain(notifier(storage, clock, config(None), counts=counts))
        assert hook.received == [] and counts.failed == 1


def test_a_subscriber_allowed_hosts_never_allows_is_given_up_at_once_not_retried(
        storage: Storage, clock: ManualClock, project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        other_port = f"http://127.0.0.1:{hook.port + 1}/hook"  # made before the setting
        subs.add(sub_id(), project, "shut", other_port)
        subs.add(sub_id(), project, "shut", hook.url())
        post(storage, project, "shut", 1, 2)
        counts = Counts()
        drain(notifier(storage, clock, config(hook.port), counts=counts))
        # Zaqar's default policy would retry each 14 times; no retry can succeed.
        assert (counts.failed, counts.sent) == (2, 2)
        assert [r.json()["body"] for r in hook.received] == [1, 2]


def test_only_events_after_the_subscription_was_created_are_sent(
        storage: Storage, clock: ManualClock, project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        post(storage, project, "late", "before")
        clock.advance(5)  # more than the 2 s a record's whole-second age may err by
        subs.add(sub_id(), project, "late", hook.url())
        post(storage, project, "late", "after")
        drain(notifier(storage, clock, config(hook.port)))
        assert [r.json()["body"] for r in hook.received] == ["after"]


def test_more_subscriptions_than_threads_each_get_their_turn(
        storage: Storage, clock: ManualClock, project: str) -> None:
    # Idle subscriptions are always ready: with a fixed order, the first
    # ``concurrency`` ones would take every tick and the rest never be told.
    subs = attach(storage)
    with receiver() as hook:
        paths = [f"/s{i}" for i in range(7)]
        for path in paths:
            subs.add(sub_id(), project, "crowded", hook.url(path))
        post(storage, project, "crowded", "hello")
        server = notifier(storage, clock, config(hook.port, concurrency=2))
        for _ in range(4):  # ceil(7 / 2) ticks, each one's steps waited out
            server.tick()
            deadline = time.monotonic() + 10
            while server._running and time.monotonic() < deadline:
                time.sleep(0.005)
                server._collect()
        assert {p: len(hook.on(p)) for p in paths} == dict.fromkeys(paths, 1)


def test_a_subscription_that_cannot_be_sent_fails_counts_and_is_given_up(
        storage: Storage, clock: ManualClock, project: str) -> None:
    # Stored before the API refused such subscribers: every attempt raised
    # from the sending library, and the step was retried for ever.
    subs = attach(storage)
    policy = {"retries_with_no_delay": 1, "minimum_delay_retries": 0,
              "maximum_delay_retries": 0, "minimum_delay": 0, "maximum_delay": 0}
    with receiver() as hook:
        subs.add(sub_id(), project, "odd", hook.url("/caf\u00e9"), _retry_policy=policy)
        subs.add(sub_id(), project, "odd", hook.url("/h"), _retry_policy=policy,
                 post_headers={"X-Evil": "a\r\nX-Injected: 1"})
        subs.add(sub_id(), project, "odd", "mailto:a@b.c?subject=x%0d%0aBcc:%20c@d.e",
                 _retry_policy=policy)
        post(storage, project, "odd", 1, 2)
        counts = Counts()
        drain(notifier(storage, clock, config(hook.port, smtp_host="127.0.0.1"),
                       counts=counts))
        # Two webhooks x two posts x (the attempt and its one retry); the mail
        # subscriber has a query, which no retry can change: one attempt each.
        assert (counts.failed, counts.sent) == (10, 0)
        assert hook.received == []
