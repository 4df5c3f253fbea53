"""Conditional updates under interleaving: no message twice, no marker twice.

On mongomock every collection call runs under one lock (mongomock is not
thread-safe), so threads interleave between single operations, the same
granularity at which a real server serializes writes to one document. What
this does not show on mongomock: two operations truly overlapping inside
the server. With ZQ_TEST_MONGO_URL the same test runs against a server.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.drivers.mongo.helpers import bodies
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules

THREADS = 4


def _parallel(fn, n=THREADS):
    with ThreadPoolExecutor(n) as pool:
        return [f.result() for f in [pool.submit(fn, i) for i in range(n)]]


def test_concurrent_claims_never_share_a_message(mongo_factory, clock, project):
    stores = [mongo_factory(clock) for _ in range(THREADS)]
    ids = stores[0].messages.post(project, "q", bodies(40), client_id="c")

    def claim_all(i):
        got = []
        while True:
            claim = stores[i].claims.create(project, "q", ttl=60, grace=60, limit=3,
                                            client_id=f"c{i}")
            if claim is None:
                return got
            got += [m.id for m in claim.messages]

    delivered = [m for got in _parallel(claim_all) for m in got]
    assert sorted(delivered) == sorted(ids)


def test_concurrent_claims_and_pops_move_each_exhausted_message_once(
        mongo_factory, clock, project):
    stores = [mongo_factory(clock) for _ in range(THREADS)]
    policy = DeadLetterPolicy(max_claim_count=1, queue="dlq")
    ids = stores[0].messages.post(project, "q", bodies(20), client_id="c")
    claim = stores[0].claims.create(project, "q", ttl=60, grace=60, limit=20,
                                    client_id="c", rules=DeliveryRules(dead_letter=policy))
    stores[0].claims.release(project, "q", claim.id, client_id="c")
    fresh = stores[0].messages.post(project, "q", bodies(8), client_id="c")

    def deliver(i):
        if i % 2:
            return [m.id for m in stores[i].messages.pop(
                project, "q", limit=2, client_id="c", rules=DeliveryRules(dead_letter=policy))]
        claim = stores[i].claims.create(project, "q", ttl=60, grace=60, limit=2,
                                        client_id="c", rules=DeliveryRules(dead_letter=policy))
        return [] if claim is None else [m.id for m in claim.messages]

    delivered = [m for got in _parallel(deliver) for m in got]
    assert sorted(delivered) == sorted(fresh)
    moved = [e.message_id for e in stores[0].events.read(limit=100_000)
             if e.kind == "dead_lettered" and e.project == project]
    assert sorted(moved) == sorted(ids)
    assert stores[0].queues.stats(project, "dlq").free == 20


def test_concurrent_posts_get_unique_increasing_markers(mongo_factory, clock, project):
    stores = [mongo_factory(clock) for _ in range(THREADS)]

    def post(i):
        return [stores[i].messages.post(project, "q", bodies(2), client_id=None)
                for _ in range(5)]

    _parallel(post)
    markers = [m.marker for m in stores[0].messages.list(project, "q", limit=1000)]
    assert len(markers) == THREADS * 10
    assert markers == sorted(set(markers))


def test_concurrent_gc_records_each_expiry_once(mongo_factory, clock, project):
    stores = [mongo_factory(clock) for _ in range(THREADS)]
    ids = stores[0].messages.post(project, "q", bodies(30), client_id=None)
    clock.advance(10_000)

    removed = _parallel(lambda i: stores[i].gc())

    expired = [e.message_id for e in stores[0].events.read(limit=100_000)
               if e.kind == "expired" and e.project == project]
    assert sorted(expired) == sorted(ids)
    assert sum(r.messages for r in removed) >= 30  # other tests' leftovers may go too
