"""QueueController: create, metadata, delete, list, count, stats, purge."""

from __future__ import annotations

import pytest

from zq import events
from zq.errors import ClaimNotFound, QueueNotFound

from .helpers import claim, events_of, post


def test_create_returns_whether_it_created(storage, project):
    assert storage.queues.create(project, "q", {"a": 1}) is True
    assert storage.queues.create(project, "q", {"a": 2}) is False
    assert storage.queues.get_metadata(project, "q") == {"a": 1}


def test_exists(storage, project):
    assert not storage.queues.exists(project, "q")
    storage.queues.create(project, "q", {})
    assert storage.queues.exists(project, "q")


def test_posting_creates_the_queue_with_empty_metadata(storage, project):
    post(storage, project, "q")
    assert storage.queues.exists(project, "q")
    assert storage.queues.get_metadata(project, "q") == {}


def test_metadata_round_trip_and_replace(storage, project):
    storage.queues.create(project, "q", {"_max_claim_count": 3, "nested": {"x": [1, "é"]}})
    assert storage.queues.get_metadata(project, "q") == {
        "_max_claim_count": 3, "nested": {"x": [1, "é"]}}
    storage.queues.set_metadata(project, "q", {"b": True})
    assert storage.queues.get_metadata(project, "q") == {"b": True}


def test_metadata_of_missing_queue_raises(storage, project):
    with pytest.raises(QueueNotFound):
        storage.queues.get_metadata(project, "nope")
    with pytest.raises(QueueNotFound):
        storage.queues.set_metadata(project, "nope", {"a": 1})
    assert not storage.queues.exists(project, "nope")


def test_delete_removes_queue_messages_and_claims(storage, project):
    post(storage, project, "q", 3)
    claimed = claim(storage, project, "q", 2)
    storage.queues.delete(project, "q")
    assert not storage.queues.exists(project, "q")
    assert storage.messages.list(project, "q", include_claimed=True) == []
    assert storage.queues.stats(project, "q").total == 0
    with pytest.raises(ClaimNotFound):
        storage.claims.get(project, "q", claimed.id)
    purged = events_of(storage, project, events.PURGED)
    assert [(e.queue, e.detail) for e in purged] == [
        ("q", {"messages": 3, "queue_deleted": True})]


def test_delete_missing_or_empty_queue_is_quiet_and_records_nothing(storage, project):
    storage.queues.delete(project, "never")
    storage.queues.create(project, "empty", {})
    storage.queues.delete(project, "empty")
    assert not storage.queues.exists(project, "empty")
    assert events_of(storage, project, events.PURGED) == []


def test_list_orders_by_name_and_pages_with_marker(storage, project):
    for name in ["c", "a", "b", "d", "B"]:
        storage.queues.create(project, name, {"name": name})
    first = storage.queues.list(project, limit=3)
    assert [q.name for q in first] == ["B", "a", "b"]
    assert first[1].metadata == {"name": "a"}
    rest = storage.queues.list(project, marker=first[-1].name, limit=3)
    assert [q.name for q in rest] == ["c", "d"]
    assert storage.queues.list(project, marker="d") == []


def test_list_and_count_filter_by_name(storage, project):
    for name in ["orders", "orders-dlq", "billing", "my_orders", "x%y"]:
        storage.queues.create(project, name, {})
    assert [q.name for q in storage.queues.list(project, name="orders")] == [
        "my_orders", "orders", "orders-dlq"]
    assert storage.queues.count(project, name="orders") == 3
    assert storage.queues.count(project) == 5
    # Wildcard characters in the filter are literal.
    assert [q.name for q in storage.queues.list(project, name="%")] == ["x%y"]
    assert storage.queues.count(project, name="_") == 1


def test_metadata_filter_pages_through_many_queues(storage, project):
    # 230 queues, every 37th a "team: ops" one: more than two scan rounds
    # (zq.queue_filter.SCAN_PAGE) between some matches.
    wanted = []
    for n in range(230):
        name = f"q{n:03d}"
        ops = n % 37 == 5
        storage.queues.create(project, name, {"team": "ops" if ops else "dev", "n": n})
        if ops:
            wanted.append(name)
    assert len(wanted) == 7
    seen, marker = [], None
    while True:
        page = storage.queues.list_matching(project, marker=marker, limit=2,
                                            metadata={"team": "ops"})
        assert len(page) <= 2
        if not page:
            break
        assert all(q.metadata["team"] == "ops" for q in page)
        seen += [q.name for q in page]
        marker = page[-1].name
    assert seen == wanted
    assert storage.queues.count_matching(project, metadata={"team": "ops"}) == 7
    both = storage.queues.list_matching(project, name="q04", metadata={"team": "ops"})
    assert [q.name for q in both] == ["q042"]
    assert storage.queues.count_matching(project, name="q04", metadata={"team": "ops"}) == 1


def test_metadata_filter_values_compare_as_json(storage, project):
    storage.queues.create(project, "int", {"v": 3, "_max_claim_count": 5})
    storage.queues.create(project, "float", {"v": 3.0})
    storage.queues.create(project, "text", {"v": "3"})
    storage.queues.create(project, "flag", {"v": True, "w": 1})
    storage.queues.create(project, "none", {})

    def names(**metadata):
        return [q.name for q in storage.queues.list_matching(project, metadata=metadata)]

    assert names(v=3) == ["float", "int"]
    assert names(v="3") == ["text"]
    assert names(v=1) == []  # true is not 1
    assert names(v=True, w=1) == ["flag"]
    assert names(_max_claim_count=5) == ["int"]
    assert names(missing="x") == []
    assert names() == ["flag", "float", "int", "none", "text"]


def test_count_of_empty_project(storage, project):
    assert storage.queues.count(project) == 0
    assert storage.queues.list(project) == []


def test_stats_counts_free_and_claimed(storage, project, clock):
    posted = post(storage, project, "q", 5)
    clock.advance(1)
    delayed = post(storage, project, "q", 1, delay=60)
    claim(storage, project, "q", 2)
    stats = storage.queues.stats(project, "q")
    assert (stats.free, stats.claimed, stats.total) == (4, 2, 6)
    assert stats.oldest.id == posted[0]
    assert stats.oldest.created == pytest.approx(1_700_000_000.0)
    assert stats.newest.id == delayed[0]
    assert stats.newest.created == pytest.approx(1_700_000_001.0)


def test_volume_counts_alive_messages_of_every_queue_and_project(storage, project, clock):
    # The backend is shared with other tests' projects: compare before and after.
    def volume() -> tuple[int, int, int]:
        found = storage.queues.volume()
        assert found.oldest is None and found.newest is None
        return found.free, found.claimed, found.total

    free, claimed, total = volume()
    post(storage, project, "a", 3)
    post(storage, project, "b", 1, delay=60)  # delayed counts as free, as in stats
    post(storage, project + "-other", "a", 2)
    held = claim(storage, project, "a", 2)
    assert volume() == (free + 4, claimed + 2, total + 6)
    storage.messages.delete(project, "a", held.messages[0].id, claim_id=held.id, client_id=None)
    storage.claims.release(project, "a", held.id, client_id=None)
    assert volume() == (free + 5, claimed, total + 5)
    storage.queues.delete(project + "-other", "a")
    assert volume() == (free + 3, claimed, total + 3)


def test_volume_leaves_out_lapsed_claims_and_expired_messages(storage, project, clock):
    # A year on, whatever other tests left on this backend has expired.
    clock.advance(365 * 86400)
    post(storage, project, "q", 2, ttl=3600)
    claim(storage, project, "q", 1, ttl=60, grace=60)
    assert (storage.queues.volume().free, storage.queues.volume().claimed) == (1, 1)
    clock.advance(61)
    assert (storage.queues.volume().free, storage.queues.volume().claimed) == (2, 0)
    clock.advance(3600)
    assert storage.queues.volume().total == 0


def test_stats_of_missing_or_empty_queue_are_zeros(storage, project):
    stats = storage.queues.stats(project, "missing")
    assert (stats.free, stats.claimed, stats.total) == (0, 0, 0)
    assert stats.oldest is None and stats.newest is None
    storage.queues.create(project, "empty", {})
    assert storage.queues.stats(project, "empty").total == 0


def test_purge_keeps_the_queue_and_records_one_event(storage, project):
    storage.queues.create(project, "q", {"keep": 1})
    post(storage, project, "q", 4)
    claimed = claim(storage, project, "q", 2)
    storage.queues.purge(project, "q")
    assert storage.queues.get_metadata(project, "q") == {"keep": 1}
    assert storage.queues.stats(project, "q").total == 0
    assert storage.messages.list(project, "q", include_claimed=True) == []
    with pytest.raises(ClaimNotFound):
        storage.claims.get(project, "q", claimed.id)
    assert [e.detail for e in events_of(storage, project, events.PURGED)] == [{"messages": 4}]
    storage.queues.purge(project, "q")
    assert len(events_of(storage, project, events.PURGED)) == 1
