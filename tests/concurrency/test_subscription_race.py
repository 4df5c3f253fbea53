"""Threads racing to subscribe the same subscriber, and to take one by PATCH.

Whatever the interleaving, a queue holds one live subscription per
subscriber: of concurrent creates exactly one gets an id, the others None;
of concurrent updates to one subscriber exactly one succeeds.
"""

from __future__ import annotations

import threading

import pytest

from zq.errors import SubscriptionConflict

pytestmark = pytest.mark.slow

WORKERS = 6
ROUNDS = 5


def race(storage_factory, clock, work) -> list:
    """Run ``work(storage)`` in WORKERS threads, each with its own storage, at once."""
    stores = [storage_factory(clock) for _ in range(WORKERS)]
    barrier = threading.Barrier(WORKERS)
    results: list = [None] * WORKERS

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(stores[i])
        except Exception as exc:  # collected: the test decides what is allowed
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for store in stores:
        store.close()
    return results


def test_concurrent_creates_of_one_subscriber_make_one(storage, storage_factory, clock,
                                                        project):
    for n in range(ROUNDS):
        subscriber = f"http://h/{n}"
        results = race(storage_factory, clock, lambda s, sub=subscriber: s.subscriptions.create(
            project, "q", sub, 300, {}))
        made = [r for r in results if isinstance(r, str)]
        assert len(made) == 1, results
        assert results.count(None) == WORKERS - 1, results
        assert storage.subscriptions.find(project, "q", subscriber).id == made[0]
    assert len(storage.subscriptions.for_queue(project, "q")) == ROUNDS


def test_concurrent_updates_to_one_subscriber_let_one_win(storage, storage_factory, clock,
                                                          project):
    ids = [storage.subscriptions.create(project, "q", f"http://h/{i}", 300, {})
           for i in range(WORKERS)]

    handed, lock = iter(ids), threading.Lock()

    def take(store):
        with lock:
            sid = next(handed)
        store.subscriptions.update(project, "q", sid, subscriber="http://taken")
        return sid

    results = race(storage_factory, clock, take)
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1, results
    assert all(isinstance(r, SubscriptionConflict) for r in results if r not in winners), results
    assert storage.subscriptions.find(project, "q", "http://taken").id == winners[0]
    subscribers = [s.subscriber for s in storage.subscriptions.for_queue(project, "q")]
    assert sorted(subscribers).count("http://taken") == 1
