"""Choosing the resolver from the configuration, once at start-up."""

from __future__ import annotations

import random

from zq.clock import Clock
from zq.config import Config
from zq.pooling.admin import PoolAdmin, Probe, ping_probe
from zq.pooling.base import Pools
from zq.pooling.resolver import CatalogPools
from zq.pooling.single import SingleBackend
from zq.pooling.store import open_management
from zq.storage import open_storage
from zq.storage.base import Storage


def open_pools(
    config: Config,
    *,
    clock: Clock,
    storage: Storage | None = None,
    probe: Probe | None = None,
    rng: random.Random | None = None,
    processes: int = 1,
) -> tuple[Pools, PoolAdmin | None]:
    """The resolver the configuration asks for, and the pool admin when pooling.

    ``[pooling] enabled``: queues live on the pools of the management store
    (``storage`` is not used). Otherwise one backend, ``storage`` or the
    configured one, serves everything. ``processes``: how many server
    workers share the pools (a pool in one process's memory is refused).
    """
    if not config.pooling.enabled:
        backend = storage or open_storage(config.storage.resolved_uri(), clock=clock,
                                          redis=config.redis, sql=config.sql)
        return SingleBackend(backend), None
    store = open_management(config.pooling.resolved_management(), rng=rng)
    admin = PoolAdmin(store.registry, config.limits, probe or ping_probe(clock),
                      processes=processes)
    def opener(uri: str, clock: Clock) -> Storage:
        return open_storage(uri, clock=clock, redis=config.redis, sql=config.sql)

    return CatalogPools(store, clock=clock, opener=opener), admin
