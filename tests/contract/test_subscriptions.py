"""Subscriptions (SubscriptionController): create, read, page, change, expire, collect."""

from __future__ import annotations

import pytest

from zq.errors import SubscriptionConflict, SubscriptionNotFound
from zq.storage.records import Collected

HOOK = "http://example.com/hook"
MAIL = "mailto:ops@example.com"


def create(storage, project, queue="q", subscriber=HOOK, ttl=300, options=None):
    return storage.subscriptions.create(project, queue, subscriber, ttl, options or {})


def ids(records):
    return [r.id for r in records]


def test_create_then_get_shows_every_field(storage, project, clock):
    sid = create(storage, project, options={"a.b": 1, "$x": [1, {"y": None}]}, ttl=600)
    assert isinstance(sid, str) and sid
    clock.advance(42.9)
    got = storage.subscriptions.get(project, "q", sid)
    assert (got.id, got.project, got.queue, got.subscriber) == (sid, project, "q", HOOK)
    assert (got.ttl, got.expires, got.age) == (600, clock.now() - 42.9 + 600, 42)
    assert got.options == {"a.b": 1, "$x": [1, {"y": None}]}
    assert got.confirmed is False
    assert storage.subscriptions.exists(project, "q", sid)


def test_duplicate_subscriber_on_a_queue_is_refused_with_none(storage, project):
    sid = create(storage, project)
    assert create(storage, project, ttl=999, options={"other": 1}) is None
    kept = storage.subscriptions.get(project, "q", sid)
    assert (kept.ttl, kept.options) == (300, {})
    assert ids(storage.subscriptions.list(project, "q")) == [sid]
    # The same subscriber on another queue, another subscriber on the same queue: fine.
    assert create(storage, project, queue="r") not in (None, sid)
    assert create(storage, project, subscriber=MAIL) not in (None, sid)


def test_find_by_subscriber(storage, project):
    sid = create(storage, project)
    assert storage.subscriptions.find(project, "q", HOOK).id == sid
    assert storage.subscriptions.find(project, "q", MAIL) is None
    assert storage.subscriptions.find(project, "r", HOOK) is None


def test_unknown_ids_are_not_found(storage, project):
    sid = create(storage, project)
    for bogus in ["00000000-0000-4000-8000-000000000000", "x", sid + "x"]:
        with pytest.raises(SubscriptionNotFound, match=f"Subscription {bogus} does not exist"):
            storage.subscriptions.get(project, "q", bogus)
        assert not storage.subscriptions.exists(project, "q", bogus)
        with pytest.raises(SubscriptionNotFound):
            storage.subscriptions.update(project, "q", bogus, ttl=10)
        with pytest.raises(SubscriptionNotFound):
            storage.subscriptions.confirm(project, "q", bogus, confirmed=True)
        storage.subscriptions.delete(project, "q", bogus)  # no error
    # The id on another queue names nothing there.
    with pytest.raises(SubscriptionNotFound):
        storage.subscriptions.get(project, "r", sid)
    storage.subscriptions.delete(project, "r", sid)
    assert storage.subscriptions.exists(project, "q", sid)


def test_projects_are_isolated(storage, project):
    other = project + "-other"
    sid = create(storage, project)
    assert storage.subscriptions.list(other, "q") == []
    assert storage.subscriptions.for_queue(other, "q") == []
    with pytest.raises(SubscriptionNotFound):
        storage.subscriptions.get(other, "q", sid)
    with pytest.raises(SubscriptionNotFound):
        storage.subscriptions.update(other, "q", sid, ttl=5)
    with pytest.raises(SubscriptionNotFound):
        storage.subscriptions.confirm(other, "q", sid, confirmed=True)
    storage.subscriptions.delete(other, "q", sid)
    assert storage.subscriptions.get(project, "q", sid).confirmed is False
    # The same subscriber in another project is its own subscription.
    assert create(storage, other) not in (None, sid)


def test_list_pages_by_id_after_the_marker(storage, project):
    made = sorted(create(storage, project, subscriber=f"http://h/{n}") for n in range(7))
    assert ids(storage.subscriptions.list(project, "q", limit=100)) == made
    first = storage.subscriptions.list(project, "q", limit=3)
    second = storage.subscriptions.list(project, "q", marker=first[-1].id, limit=3)
    third = storage.subscriptions.list(project, "q", marker=second[-1].id, limit=3)
    assert ids(first + second + third) == made
    assert storage.subscriptions.list(project, "q", marker=made[-1]) == []
    assert ids(storage.subscriptions.list(project, "q")) == made  # default limit 10


def test_list_skips_expired_and_still_fills_the_page(storage, project, clock):
    short = [create(storage, project, subscriber=f"http://s/{n}", ttl=10) for n in range(5)]
    long = sorted(create(storage, project, subscriber=f"http://l/{n}", ttl=100)
                  for n in range(3))
    clock.advance(10)
    assert ids(storage.subscriptions.list(project, "q", limit=3)) == long
    assert ids(storage.subscriptions.for_queue(project, "q")) == long
    assert not set(short) & set(ids(storage.subscriptions.live()))


def test_update_changes_only_what_is_given(storage, project, clock):
    sid = create(storage, project, options={"a": 1})
    clock.advance(100)
    storage.subscriptions.update(project, "q", sid, options={"b": 2})
    got = storage.subscriptions.get(project, "q", sid)
    assert (got.subscriber, got.ttl, got.options) == (HOOK, 300, {"b": 2})
    assert got.expires == clock.now() - 100 + 300  # ttl untouched: expiry untouched
    storage.subscriptions.update(project, "q", sid, ttl=50)
    got = storage.subscriptions.get(project, "q", sid)
    assert (got.ttl, got.expires, got.age) == (50, clock.now() + 50, 100)
    storage.subscriptions.update(project, "q", sid, subscriber=MAIL)
    assert storage.subscriptions.get(project, "q", sid).subscriber == MAIL
    assert storage.subscriptions.find(project, "q", MAIL).id == sid
    assert storage.subscriptions.find(project, "q", HOOK) is None
    # The old subscriber is free again.
    assert create(storage, project) not in (None, sid)
    storage.subscriptions.update(project, "q", sid)  # nothing given: nothing changes
    assert storage.subscriptions.get(project, "q", sid).subscriber == MAIL


def test_update_to_a_taken_subscriber_conflicts_and_changes_nothing(storage, project):
    first = create(storage, project)
    second = create(storage, project, subscriber=MAIL)
    with pytest.raises(SubscriptionConflict, match="Such subscription already exists"):
        storage.subscriptions.update(project, "q", second, subscriber=HOOK, ttl=5)
    got = storage.subscriptions.get(project, "q", second)
    assert (got.subscriber, got.ttl) == (MAIL, 300)
    assert storage.subscriptions.find(project, "q", HOOK).id == first
    # Setting its own subscriber again is no conflict.
    storage.subscriptions.update(project, "q", second, subscriber=MAIL)


def test_update_may_take_the_subscriber_of_an_expired_one(storage, project, clock):
    create(storage, project, ttl=10)
    sid = create(storage, project, subscriber=MAIL, ttl=100)
    clock.advance(10)
    storage.subscriptions.update(project, "q", sid, subscriber=HOOK)
    assert storage.subscriptions.find(project, "q", HOOK).id == sid


def test_delete_removes_it(storage, project):
    sid = create(storage, project)
    storage.subscriptions.delete(project, "q", sid)
    assert not storage.subscriptions.exists(project, "q", sid)
    assert storage.subscriptions.list(project, "q") == []
    assert create(storage, project) not in (None, sid)  # subscriber free again


def test_confirm_sets_and_clears(storage, project):
    sid = create(storage, project)
    storage.subscriptions.confirm(project, "q", sid, confirmed=True)
    assert storage.subscriptions.get(project, "q", sid).confirmed is True
    storage.subscriptions.confirm(project, "q", sid, confirmed=True)  # again: still fine
    assert storage.subscriptions.get(project, "q", sid).confirmed is True
    storage.subscriptions.confirm(project, "q", sid, confirmed=False)
    assert storage.subscriptions.get(project, "q", sid).confirmed is False


def test_expired_subscription_is_gone_at_once_and_replaceable(storage, project, clock):
    sid = create(storage, project, ttl=60)
    clock.advance(59.5)
    assert storage.subscriptions.exists(project, "q", sid)
    clock.advance(0.5)
    assert not storage.subscriptions.exists(project, "q", sid)
    with pytest.raises(SubscriptionNotFound):
        storage.subscriptions.get(project, "q", sid)
    with pytest.raises(SubscriptionNotFound):
        storage.subscriptions.update(project, "q", sid, ttl=100)
    with pytest.raises(SubscriptionNotFound):
        storage.subscriptions.confirm(project, "q", sid, confirmed=True)
    assert storage.subscriptions.find(project, "q", HOOK) is None
    again = create(storage, project)
    assert again not in (None, sid)
    assert ids(storage.subscriptions.list(project, "q")) == [again]


def test_for_queue_and_live_return_live_ones(storage, project, clock):
    a = create(storage, project, queue="a")
    b1 = create(storage, project, queue="b", ttl=10)
    b2 = create(storage, project, queue="b", subscriber=MAIL)
    other = project + "-z"
    c = create(storage, other, queue="a")
    assert ids(storage.subscriptions.for_queue(project, "a")) == [a]
    assert ids(storage.subscriptions.for_queue(project, "b")) == sorted([b1, b2])
    mine = [s for s in storage.subscriptions.live() if s.project in (project, other)]
    assert ids(mine) == [a, *sorted([b1, b2]), c]  # by project, queue, id
    clock.advance(10)
    assert ids(storage.subscriptions.for_queue(project, "b")) == [b2]
    mine = [s for s in storage.subscriptions.live() if s.project in (project, other)]
    assert ids(mine) == [a, b2, c]
    assert {s.subscriber for s in mine} == {HOOK, MAIL}


def test_gc_removes_expired_subscriptions(storage, project, clock):
    gone = [create(storage, project, subscriber=f"http://g/{n}", ttl=10) for n in range(3)]
    kept = create(storage, project, ttl=1000)
    clock.advance(11)
    collected = storage.gc()
    assert collected.subscriptions >= len(gone)
    assert ids(storage.subscriptions.for_queue(project, "q")) == [kept]
    # Once collected, rolling the clock back (a test-only move) shows nothing:
    # the rows are gone, not merely hidden.
    clock.advance(-11)
    assert ids(storage.subscriptions.list(project, "q")) == [kept]


def test_collected_adds_subscriptions():
    total = Collected(1, 2, 3, 4) + Collected(subscriptions=5)
    assert (total.messages, total.claims, total.moved, total.subscriptions) == (1, 2, 3, 9)


def test_subscriptions_outlive_their_queue(storage, project):
    storage.queues.create(project, "q", {})
    sid = create(storage, project)
    storage.queues.delete(project, "q")
    assert storage.subscriptions.exists(project, "q", sid)
