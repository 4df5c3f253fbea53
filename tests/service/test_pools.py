"""The service over more than one backend: listings merge, dead letter queues share a pool."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.backends import BACKENDS, StorageFactory
from zq.clock import ManualClock
from zq.config import Limits
from zq.errors import DeadLetterConflict
from zq.service import QueueService
from zq.storage.base import Storage


@pytest.fixture(scope="module")
def factories() -> Iterator[tuple[StorageFactory, StorageFactory]]:
    with BACKENDS["sqlite"]() as first, BACKENDS["sqlite"]() as second:
        yield first, second


class ByFirstLetter:
    """Queues a-m on one backend, the rest on the other."""

    def __init__(self, low: Storage, high: Storage) -> None:
        self.low, self.high = low, high

    def storage_for(self, project: str, queue: str) -> Storage:
        return self.low if queue[0] <= "m" else self.high

    def storages(self) -> dict[str, Storage]:
        return {"low": self.low, "high": self.high}

    def close(self) -> None:
        self.low.close()
        self.high.close()


@pytest.fixture
def service(factories) -> Iterator[QueueService]:
    clock = ManualClock()
    pools = ByFirstLetter(factories[0](clock), factories[1](clock))
    try:
        yield QueueService(Limits(), pools)
    finally:
        pools.close()


@pytest.fixture
def project() -> str:
    return f"p-{uuid.uuid4().hex}"


def test_listing_merges_backends_in_name_order(service, project):
    for name in ("z", "b", "n", "a", "m", "y"):
        service.create_queue(project, name, None)
    first = service.list_queues(project, limit=4, with_count=True)
    assert [q.name for q in first.queues] == ["a", "b", "m", "n"]
    assert first.count == 6
    rest = service.list_queues(project, marker="n", limit=4)
    assert [q.name for q in rest.queues] == ["y", "z"]


def test_dead_letter_queue_must_share_the_pool(service, project):
    with pytest.raises(DeadLetterConflict, match="another pool"):
        service.create_queue(project, "alpha", {"_dead_letter_queue": "zulu"})
    assert service.create_queue(project, "alpha", {"_dead_letter_queue": "bravo"})


def test_health_reports_every_pool(service):
    report = service.health()
    assert set(report) == {"low", "high"}
    assert all(r["storage_reachable"] for r in report.values())
