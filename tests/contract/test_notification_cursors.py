"""Notification cursors and their leases, on every driver (zq.storage.cursors)."""

from __future__ import annotations

from zq.clock import ManualClock
from zq.events import fingerprint
from zq.storage.base import Storage
from zq.storage.records import NewMessage

LEASE = 30.0


def test_a_new_subscription_gets_a_cursor_at_the_start(storage: Storage) -> None:
    cursors = storage.notification_cursors
    assert cursors is not None
    lease = cursors.acquire("sub-new", "a", LEASE)
    assert lease is not None and lease.cursor is None and lease.owner == "a"
    assert cursors.positions()["sub-new"] is None


def test_a_held_lease_keeps_others_out_until_it_runs_out(
    storage: Storage, clock: ManualClock
) -> None:
    cursors = storage.notification_cursors
    assert cursors is not None
    assert cursors.acquire("sub-1", "a", LEASE) is not None
    assert cursors.acquire("sub-1", "b", LEASE) is None
    assert cursors.acquire("sub-1", "a", LEASE) is not None  # the holder renews
    clock.advance(LEASE - 1)
    assert cursors.acquire("sub-1", "b", LEASE) is None  # renewed: not run out yet
    clock.advance(2)
    taken = cursors.acquire("sub-1", "b", LEASE)
    assert taken is not None and taken.owner == "b"
    assert cursors.acquire("sub-1", "a", LEASE) is None


def test_advance_moves_the_cursor_only_for_the_holder(
    storage: Storage, clock: ManualClock
) -> None:
    cursors = storage.notification_cursors
    assert cursors is not None
    assert cursors.acquire("sub-2", "a", LEASE) is not None
    assert cursors.advance("sub-2", "a", "17", LEASE)
    clock.advance(LEASE + 1)
    # Run out but taken by nobody: still a's.
    assert cursors.advance("sub-2", "a", "18", LEASE)
    clock.advance(LEASE + 1)
    lease = cursors.acquire("sub-2", "b", LEASE)
    assert lease is not None and lease.cursor == "18"
    assert not cursors.advance("sub-2", "a", "99", LEASE)
    assert cursors.positions()["sub-2"] == "18"


def test_advance_renews_the_lease(storage: Storage, clock: ManualClock) -> None:
    cursors = storage.notification_cursors
    assert cursors is not None
    assert cursors.acquire("sub-3", "a", LEASE) is not None
    clock.advance(LEASE - 1)
    assert cursors.advance("sub-3", "a", "5", LEASE)
    clock.advance(LEASE - 1)
    assert cursors.acquire("sub-3", "b", LEASE) is None


def test_release_lets_another_take_it_at_once_and_keeps_the_cursor(storage: Storage) -> None:
    cursors = storage.notification_cursors
    assert cursors is not None
    assert cursors.acquire("sub-4", "a", LEASE) is not None
    assert cursors.advance("sub-4", "a", "7", LEASE)
    cursors.release("sub-4", "b")  # not the holder: nothing happens
    assert cursors.acquire("sub-4", "b", LEASE) is None
    cursors.release("sub-4", "a")
    lease = cursors.acquire("sub-4", "b", LEASE)
    assert lease is not None and lease.cursor == "7"


def test_forget_removes_the_cursor(storage: Storage) -> None:
    cursors = storage.notification_cursors
    assert cursors is not None
    assert cursors.acquire("sub-5", "a", LEASE) is not None
    cursors.forget("sub-5")
    assert "sub-5" not in cursors.positions()
    lease = cursors.acquire("sub-5", "b", LEASE)
    assert lease is not None and lease.cursor is None


def test_sort_key_orders_cursors_as_the_log_reads_them(storage: Storage) -> None:
    storage.messages.post("p", "q-order", [_message(i) for i in range(3)], client_id=None)
    events = [e for e in storage.events.read(limit=100000) if e.queue == "q-order"]
    keys = [storage.events.sort_key(e.cursor) for e in events]
    assert len(keys) == 3 and keys == sorted(keys) and len(set(keys)) == 3


def _message(i: int) -> NewMessage:
    body = f'{{"i": {i}}}'
    return NewMessage(body=body, ttl=300, delay=0, fingerprint=fingerprint(body))


def test_confirmation_request_rows_follow_the_same_leases(storage: Storage) -> None:
    """zq.notifications.confirmation_requests keeps its state in cursor rows."""
    import uuid

    from zq.notifications.confirmation_requests import SENT, UNSUBSCRIBE, key, mark

    cursors = storage.notification_cursors
    assert cursors is not None
    sid = str(uuid.uuid4())
    row = key(sid)  # 44 characters with a colon: every driver stores it as is
    assert cursors.acquire(row, "a", LEASE) is not None
    mark(cursors, sid, unsubscribed=False)  # a new request while "a" sends the old one
    assert row not in cursors.positions()
    assert not cursors.advance(row, "a", SENT, LEASE)  # "a" cannot mark the new one sent
    assert row not in cursors.positions()
    assert cursors.acquire(row, "b", LEASE) is not None
    mark(cursors, sid, unsubscribed=True)  # the API's state wins over b's lease
    assert cursors.positions()[row] == UNSUBSCRIBE
    taken = cursors.acquire(row, "c", LEASE)  # released by the API: free at once
    assert taken is not None and taken.cursor == UNSUBSCRIBE
    assert cursors.advance(row, "c", SENT, LEASE)
    assert cursors.positions()[row] == SENT


def test_end_is_the_last_event_and_a_read_after_it_gets_only_newer_ones(
        storage: Storage) -> None:
    storage.messages.post("p", "q-end", [_message(i) for i in range(2)], client_id=None)
    end = storage.events.end()
    assert end is not None
    assert [e.cursor for e in storage.events.read(after=end, limit=100000)] == []
    assert end in {e.cursor for e in storage.events.read(limit=100000)}
    storage.messages.post("p", "q-end", [_message(7)], client_id=None)
    [newer] = storage.events.read(after=end, limit=100000)
    assert newer.queue == "q-end" and storage.events.end() == newer.cursor


def test_start_gives_a_new_subscription_its_first_cursor_held_by_nobody(
        storage: Storage) -> None:
    cursors = storage.notification_cursors
    assert cursors is not None
    cursors.start("sub-start", "41")
    assert cursors.positions()["sub-start"] == "41"
    lease = cursors.acquire("sub-start", "a", LEASE)
    assert lease is not None and lease.cursor == "41"
    assert cursors.advance("sub-start", "a", "42", LEASE)
    cursors.start("sub-start", "7")  # it has a row: nothing changes, the lease stays
    assert cursors.positions()["sub-start"] == "42"
    assert cursors.acquire("sub-start", "b", LEASE) is None
