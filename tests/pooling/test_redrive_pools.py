"""Redrive under pooling: destinations stay on the dead letter queue's pool."""

from __future__ import annotations

import pytest

from tests.pooling.conftest import Pooled
from zq.errors import DeadLetterConflict


def dead_letters(pooled: Pooled, project: str, source: str, count: int) -> list[str]:
    """Messages of ``source`` (dead lettering into ``dlq``) rejected into ``dlq``."""
    service = pooled.service
    service.create_queue(project, source, {"_dead_letter_queue": "dlq"})
    posted = service.post_messages(project, source, {"messages": [{"body": n} for n in
                                                                  range(count)]},
                                   client_id=None, body_size=10)
    claimed = service.claim(project, source, {"ttl": 60, "grace": 60}, limit=count,
                            client_id=None)
    for message_id in posted:
        service.reject_message(project, source, message_id, {"description": "boom"},
                               claim_id=claimed.id, client_id=None)
    return posted


def other_pool_than(pooled: Pooled, project: str, pool: str, prefix: str) -> str:
    """A new queue placed on another pool than ``pool`` (placement is seeded)."""
    for i in range(50):
        name = f"{prefix}{i}"
        pooled.service.create_queue(project, name, None)
        if pooled.pools.pool_of(project, name) != pool:
            return name
    raise AssertionError("placement never chose the other pool")


def test_a_destination_on_another_pool_is_409_and_nothing_moves(two_pools, project):
    dead_letters(two_pools, project, "orders", 2)
    home = two_pools.pools.pool_of(project, "dlq")
    elsewhere = other_pool_than(two_pools, project, home, "far")
    with pytest.raises(DeadLetterConflict, match=f"{elsewhere!r} lives on pool"):
        two_pools.service.redrive(project, "dlq", {"to": elsewhere}, client_id=None)
    with pytest.raises(DeadLetterConflict):
        two_pools.service.redrive(project, "dlq", {"to": elsewhere, "dry_run": True},
                                  client_id=None)
    assert two_pools.service.queue_stats(project, "dlq").total == 2


def test_a_missing_destination_is_placed_on_the_dead_letter_queues_pool(two_pools, project):
    posted = dead_letters(two_pools, project, "orders", 2)
    home = two_pools.pools.pool_of(project, "dlq")
    for i in range(8):  # whatever the weighted choice would have said
        name = f"retry{i}"
        result = two_pools.service.redrive(project, "dlq", {"to": name, "create": True,
                                                           "filter": {"ids": [posted[i % 2]]}},
                                           client_id=None)
        assert two_pools.pools.pool_of(project, name) == home
        assert result.moved == 1
        # Back into the DLQ for the next round (a redrive with to, same pool).
        assert two_pools.service.redrive(project, name, {"to": "dlq"},
                                         client_id=None).moved == 1
    assert two_pools.service.queue_stats(project, "dlq").total == 2
