"""Pooling fixtures: a fresh management store per test over shared pool databases.

Two SQLite files (made once per module) stand for two backends; each test
registers them as pools in its own management store and uses a project id
of its own, so tests never see each other's queues. Placement draws from a
seeded random, so weighted choices are reproducible.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from zq.clock import ManualClock
from zq.config import Config, Limits
from zq.pooling.admin import PoolAdmin, ping_probe
from zq.pooling.resolver import CatalogPools
from zq.pooling.store import open_management
from zq.service import QueueService
from zq.storage.sql import migrate

SEED = 20260101


@pytest.fixture(scope="module")
def pool_uris(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two migrated SQLite databases: ``{"one": uri, "two": uri}``."""
    directory = tmp_path_factory.mktemp("pools")
    uris = {name: f"sqlite:///{directory / name}.sqlite3" for name in ("one", "two", "three")}
    for uri in uris.values():
        migrate.upgrade(uri)
    return uris


@pytest.fixture
def management_uri(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'management.sqlite3'}"


@dataclass
class Pooled:
    """One process's view: resolver, service and admin over one management store."""

    pools: CatalogPools
    service: QueueService
    admin: PoolAdmin

    def close(self) -> None:
        self.pools.close()


def make_pooled(management_uri: str, clock: ManualClock, seed: int = SEED) -> Pooled:
    store = open_management(management_uri, rng=random.Random(seed))
    pools = CatalogPools(store, clock=clock)
    admin = PoolAdmin(store.registry, Limits(), ping_probe(clock))
    return Pooled(pools, QueueService(Limits(), pools), admin)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def pooled(management_uri: str, clock: ManualClock) -> Iterator[Pooled]:
    """A pooled service with no pool registered yet."""
    made = make_pooled(management_uri, clock)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def two_pools(pooled: Pooled, pool_uris: dict[str, str]) -> Pooled:
    """Pools ``one`` and ``two``, both flavor-less, weight 100 each."""
    pooled.admin.put_pool("one", {"uri": pool_uris["one"], "weight": 100})
    pooled.admin.put_pool("two", {"uri": pool_uris["two"], "weight": 100})
    return pooled


@pytest.fixture
def project() -> str:
    return f"p-{uuid.uuid4().hex}"


@pytest.fixture
def pooling_config(management_uri: str) -> Config:
    return Config().with_overrides(pooling={"enabled": True, "management": management_uri})
