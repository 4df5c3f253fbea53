"""Storage.wakeups.listen: the backend itself wakes waiting claims, across processes.

On every backend that has notifications (Redis pub/sub, PostgreSQL
LISTEN/NOTIFY on both of its write paths, MongoDB change streams on a
replica set) a listener hears exactly the queues the rule of
zq.storage.wake_events names, from any connection: a post, a release, a
retry reject, a move into a queue. SQLite, MariaDB and MongoDB without a
replica set (mongomock) have none: ``listen`` is None there and waiters
rely on the re-check.

Each test makes its changes, then posts to a *fence* queue and waits until
the fence is heard: a backend reports in the order the changes were made,
so everything reported before the fence is all the changes reported.
A listener reports the queues it heard together once each: how many
notifications a change sends is tested on the wire (tests/drivers).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest

from zq.errors import ClaimMismatch
from zq.poison import moves
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.base import Storage
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.wake_listener import ThreadedListener

from .helpers import CLAIM_TTL, GRACE, claim, post

# Seconds a listener may take to connect, or to hear a change.
HEAR_SECONDS = 10.0

NO_NOTIFICATIONS = {"sqlite", "mariadb"}


class Heard:
    """What a listener reported, in order."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []
        self.connections = 0  # wake_all calls: one per connection made again
        self._changed = threading.Condition()

    def wake(self, project: str, queue: str) -> None:
        with self._changed:
            self.keys.append((project, queue))
            self._changed.notify_all()

    def wake_all(self) -> None:
        with self._changed:
            self.connections += 1
            self._changed.notify_all()

    def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        with self._changed:
            assert self._changed.wait_for(condition, HEAR_SECONDS), what


@pytest.fixture
def heard(storage: Storage, backend_name: str) -> Iterator[Heard]:
    """A listener on ``storage``; skipped where the backend has no notifications."""
    found = Heard()
    listener = storage.wakeups.listen(found.wake, found.wake_all)
    if listener is None:
        assert backend_name in NO_NOTIFICATIONS or backend_name == "mongo"
        pytest.skip(f"{backend_name} has no notifications: waiters rely on the re-check")
    try:
        assert isinstance(listener, ThreadedListener)
        assert listener.wait_connected(HEAR_SECONDS), "the listener never connected"
        yield found
    finally:
        listener.close()


def reported(storage: Storage, project: str, heard: Heard) -> list[tuple[str, str]]:
    """The distinct queues of ``project`` reported since the last fence, once a new one is heard.

    Distinct: a listener reports the queues heard together once each.
    """
    fence = f"fence-{uuid.uuid4().hex[:8]}"
    post(storage, project, fence)
    heard.wait_for(lambda: (project, fence) in heard.keys, "the fence was never heard")
    before = heard.keys[:heard.keys.index((project, fence))]
    start = max((i + 1 for i, key in enumerate(before) if key[1].startswith("fence-")),
                default=0)
    return list(dict.fromkeys(key for key in before[start:] if key[0] == project))


def test_listen_is_none_exactly_where_the_backend_has_no_notification(storage, backend_name):
    listener = storage.wakeups.listen(lambda project, queue: None)
    try:
        if backend_name in NO_NOTIFICATIONS:
            assert listener is None
        elif backend_name != "mongo":  # mongo: only a replica set has change streams
            assert listener is not None
    finally:
        if listener is not None:
            listener.close()


def test_a_post_wakes_its_queue_once_and_no_other(storage, project, heard):
    post(storage, project, "q", count=10)
    post(storage, project, "later", delay=30)  # a delay: waiters learn its moment
    assert reported(storage, project, heard) == [(project, "q"), (project, "later")]


def test_claims_renewals_and_deletes_wake_nobody(storage, project, heard):
    ids = post(storage, project, "q", count=2)
    assert reported(storage, project, heard) == [(project, "q")]
    claimed = claim(storage, project, "q")
    storage.claims.renew(project, "q", claimed.id, ttl=CLAIM_TTL, grace=GRACE, client_id=None)
    storage.messages.delete(project, "q", ids[0], claim_id=claimed.id, client_id=None)
    assert reported(storage, project, heard) == []


def test_a_release_and_a_retry_reject_wake_their_queue(storage, project, heard):
    ids = post(storage, project, "q", count=2)
    claimed = claim(storage, project, "q")
    assert reported(storage, project, heard) == [(project, "q")]  # the post
    storage.messages.reject(project, "q", ids[0], claim_id=claimed.id, client_id=None,
                            description="busy", retry_after=None)
    assert reported(storage, project, heard) == [(project, "q")]
    storage.claims.release(project, "q", claimed.id, client_id=None)
    assert reported(storage, project, heard) == [(project, "q")]


def test_a_refused_change_wakes_nobody(storage, project, heard):
    ids = post(storage, project, "q")
    claim(storage, project, "q")
    assert reported(storage, project, heard) == [(project, "q")]  # the post
    with pytest.raises(ClaimMismatch):
        storage.messages.reject(project, "q", ids[0], claim_id=uuid.uuid4().hex,
                                client_id=None, description=None, retry_after=None)
    storage.claims.release(project, "q", uuid.uuid4().hex, client_id=None)  # unknown claim
    assert reported(storage, project, heard) == []


def test_a_move_wakes_its_destination_not_its_source(storage, project, heard):
    ids = post(storage, project, "q", count=3)
    claimed = claim(storage, project, "q", limit=1)
    assert reported(storage, project, heard) == [(project, "q")]  # the post
    storage.messages.move(project, "q", [ids[0]], moves.rejected("dlq", None, "bad"),
                          claim_id=claimed.id, client_id=None)
    assert reported(storage, project, heard) == [(project, "dlq")]
    storage.messages.move(project, "dlq", [ids[0]], moves.redriven("back", 300),
                          client_id=None)
    assert reported(storage, project, heard) == [(project, "back")]


def test_a_claim_that_dead_letters_wakes_the_dead_letter_queue(storage, project, heard, clock):
    post(storage, project, "q", count=2)
    assert reported(storage, project, heard) == [(project, "q")]
    policy = DeadLetterPolicy(max_claim_count=1, queue="q-dlq")
    rules = DeliveryRules(dead_letter=policy)
    first = storage.claims.create(project, "q", ttl=CLAIM_TTL, grace=GRACE, limit=2,
                                  client_id="c", rules=rules)
    assert first is not None
    clock.advance(CLAIM_TTL + 1)  # the claim lapses: both messages are exhausted
    assert storage.claims.create(project, "q", ttl=CLAIM_TTL, grace=GRACE, limit=2,
                                 client_id="c", rules=rules) is None
    assert reported(storage, project, heard) == [(project, "q-dlq")]


def test_projects_and_queue_names_never_mix(storage, project, heard):
    other = f"{project}:12"  # a project id ending as another's length prefix would
    post(storage, other, "q")
    post(storage, project, "12:q")
    fence = reported(storage, project, heard)
    assert fence == [(project, "12:q")]
    assert (other, "q") in heard.keys
