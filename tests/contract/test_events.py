"""The event log: what each operation records, paging and trimming."""

from __future__ import annotations

import pytest

from zq import events
from zq.errors import MessageIsClaimed

from .helpers import claim, events_of, post, raw_message


def test_posted_events(storage, project, clock):
    body = '{"hello": "w\\u00f6rld"}'
    [message_id] = storage.messages.post(
        project, "q", [raw_message(body, ttl=120, delay=5)], client_id="poster")
    [event] = events_of(storage, project)
    assert (event.kind, event.queue, event.message_id, event.client_id) == (
        events.POSTED, "q", message_id, "poster")
    assert event.time == pytest.approx(clock.now())
    assert event.detail == {"ttl": 120, "delay": 5, "fingerprint": events.fingerprint(body),
                            "size": len(body.encode())}


def test_claimed_renewed_released_events(storage, project, clock):
    posted = post(storage, project, "q", 2)
    claimed = claim(storage, project, "q", 2, client_id="w1")
    clock.advance(10)
    storage.claims.renew(project, "q", claimed.id, ttl=60, grace=60, client_id="w2")
    storage.messages.delete(project, "q", posted[0], claim_id=claimed.id, client_id="w1")
    storage.claims.release(project, "q", claimed.id, client_id="w3")
    seen = [(e.kind, e.message_id, e.claim_id, e.client_id, e.claim_count)
            for e in events_of(storage, project) if e.kind != events.POSTED]
    assert seen == [
        (events.CLAIMED, posted[0], claimed.id, "w1", 1),
        (events.CLAIMED, posted[1], claimed.id, "w1", 1),
        (events.RENEWED, posted[0], claimed.id, "w2", 1),
        (events.RENEWED, posted[1], claimed.id, "w2", 1),
        (events.DELETED, posted[0], claimed.id, "w1", 1),
        (events.RELEASED, posted[1], claimed.id, "w3", 1),
    ]


def test_claimed_event_counts_follow_the_message(storage, project):
    posted = post(storage, project, "q", 1)
    for _ in range(3):
        storage.claims.release(project, "q", claim(storage, project, "q").id, client_id=None)
    counts = [e.claim_count for e in events_of(storage, project, events.CLAIMED)]
    assert counts == [1, 2, 3]
    assert {e.message_id for e in events_of(storage, project, events.CLAIMED)} == set(posted)


def test_failed_operations_record_nothing(storage, project):
    post(storage, project, "q", 1)
    claimed = claim(storage, project, "q")
    before = len(events_of(storage, project))
    with pytest.raises(MessageIsClaimed):
        storage.messages.delete(project, "q", claimed.messages[0].id, claim_id=None,
                                client_id=None)
    storage.messages.delete(project, "q", "unknown", claim_id=None, client_id=None)
    assert claim(storage, project, "q") is None
    assert len(events_of(storage, project)) == before


def test_read_pages_after_a_cursor(storage, project):
    posted = post(storage, project, "q", 5)
    everything = storage.events.read(limit=100_000)
    mine = [e for e in everything if e.project == project]
    assert [e.message_id for e in mine] == posted
    start = everything.index(mine[0])
    cursor = everything[start - 1].cursor if start else None
    page = storage.events.read(after=cursor, limit=2)
    assert [e.message_id for e in page] == posted[:2]
    page = storage.events.read(after=page[-1].cursor, limit=2)
    assert [e.message_id for e in page] == posted[2:4]
    page = storage.events.read(after=page[-1].cursor, limit=100_000)
    assert [e.message_id for e in page if e.project == project] == posted[4:]


def test_trim_removes_events_up_to_the_cursor(storage, project):
    posted = post(storage, project, "q", 4)
    mine = events_of(storage, project)
    removed = storage.events.trim(up_to=mine[1].cursor)
    assert removed >= 2
    left = events_of(storage, project)
    assert [e.message_id for e in left] == posted[2:]
    assert storage.events.read(after=mine[1].cursor)[0].cursor == left[0].cursor
    assert storage.events.trim(up_to=mine[1].cursor) == 0
    # Cursors are never reused once trimmed.
    later = post(storage, project, "q", 1)
    [last] = [e for e in events_of(storage, project) if e.message_id == later[0]]
    assert [e.message_id for e in storage.events.read(after=mine[-1].cursor)
            if e.project == project] == later
    assert last.cursor not in {e.cursor for e in mine}


def test_count_counts_the_events_after_a_cursor(storage, project):
    post(storage, project, "q", 3)
    everything = storage.events.read(limit=100_000)
    assert storage.events.count() == len(everything)
    assert storage.events.count(after=everything[-3].cursor) == 2
    assert storage.events.count(after=everything[-1].cursor) == 0
