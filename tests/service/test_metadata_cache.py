"""The service with a metadata cache: its own changes at once, others' after the cache time."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.backends import BACKENDS
from zq.clock import ManualClock
from zq.config import Limits
from zq.metadata_cache import MetadataCache
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.storage.base import Storage

POLICY = {"_max_claim_count": 1, "_dead_letter_queue": "dead"}


@pytest.fixture
def storage() -> Iterator[Storage]:
    with BACKENDS["sqlite"]() as factory:
        yield factory(ManualClock())


def claimed_twice(service: QueueService, project: str) -> bool:
    """Post one message, claim it, release, claim again: delivered the second time?"""
    service.post_messages(project, "work", {"messages": [{"body": 1}]},
                          client_id=None, body_size=10)
    first = service.claim(project, "work", None, limit=1, client_id=None)
    assert first is not None
    service.release_claim(project, "work", first.id, client_id=None)
    return service.claim(project, "work", None, limit=1, client_id=None) is not None


def test_own_metadata_change_applies_to_the_next_claim(storage: Storage) -> None:
    now = [0.0]
    service = QueueService(Limits(), SingleBackend(storage),
                           metadata_cache=MetadataCache(60, clock=lambda: now[0]))
    project = f"p-{uuid.uuid4().hex[:8]}"
    service.create_queue(project, "work", {})
    assert claimed_twice(service, project)  # caches {} for the queue
    service.patch_metadata(project, "work", [
        {"op": "add", "path": f"/metadata/{key}", "value": value}
        for key, value in POLICY.items()])
    assert not claimed_twice(service, project)  # the cache forgot: moved, not delivered


def test_another_process_change_shows_after_the_cache_time(storage: Storage) -> None:
    now = [0.0]
    cached = QueueService(Limits(), SingleBackend(storage),
                          metadata_cache=MetadataCache(1.0, clock=lambda: now[0]))
    other = QueueService(Limits(), SingleBackend(storage))
    project = f"p-{uuid.uuid4().hex[:8]}"
    cached.create_queue(project, "work", {})
    assert claimed_twice(cached, project)
    other.patch_metadata(project, "work", [
        {"op": "add", "path": f"/metadata/{key}", "value": value}
        for key, value in POLICY.items()])
    assert claimed_twice(cached, project)  # still the cached metadata
    now[0] = 1.0
    assert not claimed_twice(cached, project)


def test_reading_metadata_back_is_never_cached(storage: Storage) -> None:
    cached = QueueService(Limits(), SingleBackend(storage),
                          metadata_cache=MetadataCache(60, clock=lambda: 0.0))
    other = QueueService(Limits(), SingleBackend(storage))
    project = f"p-{uuid.uuid4().hex[:8]}"
    cached.create_queue(project, "work", {})
    cached.post_messages(project, "work", {"messages": [{"body": 1}]},
                         client_id=None, body_size=10)
    other.patch_metadata(project, "work", [
        {"op": "add", "path": "/metadata/owner", "value": "ops"}])
    assert cached.queue_metadata(project, "work")["owner"] == "ops"
