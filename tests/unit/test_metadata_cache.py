"""The per-process metadata cache: reads a driver's deliveries check are kept, others
for their seconds."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from zq.service.metadata_cache import MAX_ENTRIES, MetadataCache
from zq.storage.records import MetadataRead


class FakeStorage:
    """Counts ``queues.read_metadata`` calls; answers ``value`` at ``version``.

    Without a version, a driver whose deliveries check no version.
    """

    def __init__(self, version: str | None = None) -> None:
        self.calls = 0
        self.value: dict[str, Any] = {"_max_claim_count": 3}
        self.version = version or "v"
        self.queues = SimpleNamespace(read_metadata=self._read)
        # Storage.checks_metadata_version: a driver whose deliveries check versions.
        self.checks_metadata_version = version is not None

    def _read(self, project: str, queue: str) -> MetadataRead:
        self.calls += 1
        return MetadataRead(dict(self.value), self.version)


def test_zero_seconds_reads_unversioned_metadata_every_time() -> None:
    cache, storage = MetadataCache(0), FakeStorage()
    first = cache.get(storage, "p", "q")  # type: ignore[arg-type]
    second = cache.get(storage, "p", "q")  # type: ignore[arg-type]
    assert storage.calls == 2
    assert not first.hit and not second.hit


def test_an_unversioned_entry_is_served_until_it_expires() -> None:
    now = [100.0]
    cache, storage = MetadataCache(1.0, clock=lambda: now[0]), FakeStorage()
    assert cache.get(storage, "p", "q").read.metadata == {"_max_claim_count": 3}
    storage.value = {"_max_claim_count": 5}  # changed through another process
    now[0] = 100.9
    cached = cache.get(storage, "p", "q")
    assert cached.hit and cached.read.metadata == {"_max_claim_count": 3}
    assert storage.calls == 1
    now[0] = 101.0
    assert cache.get(storage, "p", "q").read.metadata == {"_max_claim_count": 5}
    assert storage.calls == 2


def test_a_versioned_entry_is_kept_whatever_the_seconds() -> None:
    now = [0.0]
    cache, storage = MetadataCache(0, clock=lambda: now[0]), FakeStorage(version="7.1")
    cache.get(storage, "p", "q")
    now[0] = 1e9
    cached = cache.get(storage, "p", "q")
    assert cached.hit and cached.read.version == "7.1"
    assert storage.calls == 1


def test_an_entry_read_from_another_storage_is_read_again() -> None:
    cache, one, other = MetadataCache(0), FakeStorage(version="1.0"), FakeStorage(version="1.0")
    cache.get(one, "p", "q")
    assert not cache.get(other, "p", "q").hit
    assert (one.calls, other.calls) == (1, 1)


def test_forget_and_keys_per_project_and_queue() -> None:
    cache, storage = MetadataCache(60.0, clock=lambda: 0.0), FakeStorage()
    cache.get(storage, "p", "q")
    cache.get(storage, "other", "q")
    cache.get(storage, "p", "q2")
    assert storage.calls == 3
    cache.forget("p", "q")
    cache.get(storage, "p", "q")
    cache.get(storage, "other", "q")
    assert storage.calls == 4


def test_the_cache_does_not_grow_without_bound() -> None:
    cache, storage = MetadataCache(60.0, clock=lambda: 0.0), FakeStorage(version="1.0")
    for i in range(MAX_ENTRIES + 5):
        cache.get(storage, "p", f"q{i}")
    assert len(cache._entries) <= MAX_ENTRIES


def test_an_unversioned_cache_keeps_a_versioned_read_only_its_seconds() -> None:
    # The breaker setting a delete reads (QueueService._outage_metadata): a
    # delete checks no version, so a read must not be kept for ever.
    now = [0.0]
    cache = MetadataCache(2.0, clock=lambda: now[0], versioned=False)
    storage = FakeStorage(version="7.1")
    cache.get(storage, "p", "q")  # type: ignore[arg-type]
    now[0] = 1.9
    assert cache.get(storage, "p", "q").hit  # type: ignore[arg-type]
    now[0] = 2.0
    assert not cache.get(storage, "p", "q").hit  # type: ignore[arg-type]
    assert storage.calls == 2
