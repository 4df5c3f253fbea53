"""Management-store round trips per claim under pooling.

Counts every read and write transaction the management store (the pools /
flavors / catalog database) serves while a pooled QueueService claims
messages, one claim at a time, from a queue with a dead letter policy and
from one without. Prints the counts per claim; run it before and after a
change to the pooled path:

    PYTHONPATH=$PWD python benchmarks/pooling_reads_per_claim.py [--claims 200]
"""

from __future__ import annotations

import argparse
import random
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zq.clock import ManualClock
from zq.config import Limits
from zq.pooling.admin import PoolAdmin, ping_probe
from zq.pooling.resolver import CatalogPools
from zq.pooling.store import ManagementStore, open_management
from zq.service import QueueService
from zq.storage.sql import migrate


def counting(store: ManagementStore) -> Counter[str]:
    """Count the store's read and write transactions from now on."""
    counts: Counter[str] = Counter()
    for kind in ("read", "write", "write_statement"):
        original = getattr(store.db, kind)

        def counted(work: Callable[..., Any], _kind: str = kind,
                    _original: Callable[..., Any] = original) -> Any:
            counts[_kind] += 1
            return _original(work)

        setattr(store.db, kind, counted)
    return counts


def per_claim(service: QueueService, counts: Counter[str], queue: str, claims: int) -> float:
    project = "bench"
    service.post_messages(project, queue, {"messages": [{"body": i} for i in range(claims)]},
                          client_id=None, body_size=10 * claims)
    counts.clear()
    for _ in range(claims):
        claim = service.claim(project, queue, {"ttl": 60}, limit=1, client_id=None)
        assert claim is not None and len(claim.messages) == 1
    return sum(counts.values()) / claims


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  PYTHONPATH=$PWD python benchmarks/pooling_reads_per_claim.py\n"
               "  PYTHONPATH=$PWD python benchmarks/pooling_reads_per_claim.py --claims 500",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=200, help="claims per queue (200)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        uris = {name: f"sqlite:///{Path(tmp) / name}.sqlite3" for name in ("one", "two")}
        for uri in uris.values():
            migrate.upgrade(uri)
        clock = ManualClock()
        store = open_management(f"sqlite:///{Path(tmp) / 'management.sqlite3'}",
                                rng=random.Random(1))
        admin = PoolAdmin(store.registry, Limits(), ping_probe(clock))
        for name, uri in uris.items():
            admin.put_pool(name, {"uri": uri, "weight": 100})
        pools = CatalogPools(store, clock=clock)
        service = QueueService(Limits(), pools)
        service.create_queue("bench", "plain", {})
        service.create_queue("bench", "policed",
                             {"_max_claim_count": 5, "_dead_letter_queue": "dead"})
        counts = counting(store)
        plain = per_claim(service, counts, "plain", args.claims)
        policed = per_claim(service, counts, "policed", args.claims)
        pools.close()
        store.close()
    print(f"management-store transactions per claim, {args.claims} claims each:")
    print(f"  queue without a dead letter policy: {plain:.2f}")
    print(f"  queue with a dead letter policy:    {policed:.2f}")


if __name__ == "__main__":
    main()
