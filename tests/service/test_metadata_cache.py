"""The service with a metadata cache: never acting on metadata another process changed
when the driver versions it; its own changes at once and others after the cache time
otherwise."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.backends import BACKENDS
from zq.clock import ManualClock
from zq.config import Limits
from zq.errors import InvalidRequest
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.service.metadata_cache import MetadataCache
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


# -- a driver that versions metadata (Redis): cached until stale, never acted on stale


@pytest.fixture
def versioned() -> Iterator[Storage]:
    with BACKENDS["redis"]() as factory:
        yield factory(ManualClock())


def count_reads(storage: Storage) -> list[int]:
    """Count ``read_metadata`` calls on ``storage`` from now on."""
    calls = [0]
    read = storage.queues.read_metadata

    def counted(project: str, queue: str):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return read(project, queue)

    storage.queues.read_metadata = counted  # type: ignore[method-assign]
    return calls


def patch(service: QueueService, project: str, metadata: dict[str, object]) -> None:
    service.patch_metadata(project, "work", [
        {"op": "add", "path": f"/metadata/{key}", "value": value}
        for key, value in metadata.items()])


def test_a_versioned_read_is_reused_while_the_metadata_stands(versioned: Storage) -> None:
    service = QueueService(Limits(), SingleBackend(versioned), metadata_cache=MetadataCache(0))
    project = f"p-{uuid.uuid4().hex[:8]}"
    service.create_queue(project, "work", {})
    reads = count_reads(versioned)
    for _ in range(3):
        service.post_messages(project, "work", {"messages": [{"body": 1}]},
                              client_id=None, body_size=10)
        assert service.claim(project, "work", None, limit=1, client_id=None) is not None
    assert reads[0] == 1


def test_another_process_change_applies_to_the_next_claim_at_once(versioned: Storage) -> None:
    cached = QueueService(Limits(), SingleBackend(versioned), metadata_cache=MetadataCache(0))
    other = QueueService(Limits(), SingleBackend(versioned))
    project = f"p-{uuid.uuid4().hex[:8]}"
    cached.create_queue(project, "work", {})
    assert claimed_twice(cached, project)  # caches {} for the queue
    patch(other, project, POLICY)
    reads = count_reads(versioned)
    assert not claimed_twice(cached, project)  # moved, not delivered: no stale policy
    assert reads[0] == 1  # found stale once, read again once
    assert cached.queue_stats(project, "dead").total == 1


def test_a_queue_deleted_and_made_again_elsewhere_is_not_served_stale(versioned: Storage) -> None:
    cached = QueueService(Limits(), SingleBackend(versioned), metadata_cache=MetadataCache(0))
    other = QueueService(Limits(), SingleBackend(versioned))
    project = f"p-{uuid.uuid4().hex[:8]}"
    cached.create_queue(project, "work", {})
    assert claimed_twice(cached, project)
    other.delete_queue(project, "work")
    other.create_queue(project, "work", POLICY)
    assert not claimed_twice(cached, project)


def test_a_cached_post_size_cap_never_refuses_a_post_the_queue_allows(
    versioned: Storage,
) -> None:
    cached = QueueService(Limits(), SingleBackend(versioned), metadata_cache=MetadataCache(0))
    other = QueueService(Limits(), SingleBackend(versioned))
    project = f"p-{uuid.uuid4().hex[:8]}"
    cached.create_queue(project, "work", {"_max_messages_post_size": 1024})
    cached.post_messages(project, "work", {"messages": [{"body": 1}]},
                         client_id=None, body_size=10)  # caches the 1024 byte cap
    patch(other, project, {"_max_messages_post_size": 4096})
    body = "x" * 2000
    [posted] = cached.post_messages(project, "work", {"messages": [{"body": body}]},
                                    client_id=None, body_size=2020)
    assert cached.get_message(project, "work", posted).body == f'"{body}"'
    patch(other, project, {"_max_messages_post_size": 1024})
    with pytest.raises(InvalidRequest):
        cached.post_messages(project, "work", {"messages": [{"body": body}]},
                             client_id=None, body_size=2020)
