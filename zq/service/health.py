"""Ping and the health report: reachability and read-only probes, per pool when pooling."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from zq.pooling import Pools
from zq.pooling.base import PoolDown
from zq.storage.base import Storage

# A project and queue name no client can use (names cannot contain ":"),
# read by the health probe so that it never touches real data.
HEALTH_PROJECT = "zq:health"
HEALTH_QUEUE = "zq-health-probe"


def ping(pools: Pools) -> bool:
    """Whether every backend answers."""
    return all(not isinstance(s, PoolDown) and s.ping() for s in pools.storages().values())


def health(pools: Pools) -> dict[str, Any]:
    """Reachability and read-only probe results, per pool when pooling."""
    reports = {name: _probe(storage) for name, storage in pools.storages().items()}
    if not pools.per_pool and len(reports) == 1:
        return next(iter(reports.values()))
    return reports


def _probe(storage: Storage | PoolDown) -> dict[str, Any]:
    """Ping a backend, time a few read-only operations on it, count its messages.

    ``message_volume`` (free, claimed, total alive messages of the backend)
    is Zaqar's (its MongoDB and SQL drivers' ``_health``).
    """
    if isinstance(storage, PoolDown):
        return {"storage_reachable": False, "operation_status": {}}
    reachable = storage.ping()
    status: dict[str, Any] = {}
    if reachable:
        probes: dict[str, Callable[[], object]] = {
            "list_queues": lambda: storage.queues.list(HEALTH_PROJECT, limit=1),
            "queue_stats": lambda: storage.queues.stats(HEALTH_PROJECT, HEALTH_QUEUE),
            "list_messages": lambda: storage.messages.list(
                HEALTH_PROJECT, HEALTH_QUEUE, limit=1
            ),
        }
        for name, probe in probes.items():
            started = time.perf_counter()
            try:
                probe()
                succeeded = True
            except Exception:  # a probe reports a failure, it never raises it
                succeeded = False
            status[name] = {
                "succeeded": succeeded,
                "seconds": round(time.perf_counter() - started, 6),
                "ref": None,
            }
    report: dict[str, Any] = {"storage_reachable": reachable, "operation_status": status}
    if reachable:
        try:
            volume = storage.queues.volume()
        except Exception:  # a health report shows what it can, it never fails
            return report
        report["message_volume"] = {
            "free": volume.free, "claimed": volume.claimed, "total": volume.total,
        }
    return report

