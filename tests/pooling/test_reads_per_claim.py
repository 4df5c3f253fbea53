"""What a pooled claim costs the management store, counted (not timed).

The dead letter colocation rule is kept where metadata is written; a claim
only makes sure its dead letter queue is registered beside it, from the
cache: one generation read for the queue, one for its dead letter queue.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tests.pooling.conftest import Pooled


@pytest.fixture
def transactions(two_pools: Pooled) -> Counter[str]:
    counts: Counter[str] = Counter()
    db = two_pools.pools.store.db
    for kind in ("read", "write", "write_statement"):
        original = getattr(db, kind)

        def counted(work: Callable[..., Any], _kind: str = kind,
                    _original: Callable[..., Any] = original) -> Any:
            counts[_kind] += 1
            return _original(work)

        setattr(db, kind, counted)
    return counts


@pytest.mark.parametrize(("metadata", "per_claim"), [
    ({}, 1),
    ({"_max_claim_count": 5, "_dead_letter_queue": "dead"}, 1),
])
def test_management_store_transactions_per_claim(
    two_pools: Pooled, transactions: Counter[str], project: str,
    metadata: dict[str, Any], per_claim: int,
) -> None:
    service = two_pools.service
    service.create_queue(project, "q", metadata)
    service.post_messages(project, "q", {"messages": [{"body": i} for i in range(6)]},
                          client_id=None, body_size=60)
    # The first claim fills this process's catalog cache; count the steady state.
    assert service.claim(project, "q", None, limit=1, client_id=None) is not None
    transactions.clear()
    for _ in range(5):
        assert service.claim(project, "q", None, limit=1, client_id=None) is not None
    assert transactions == Counter(read=5 * per_claim)
