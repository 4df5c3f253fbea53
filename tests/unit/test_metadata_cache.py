"""The per-process metadata cache: fresh for its seconds, forgotten on change."""

from __future__ import annotations

from zq.metadata_cache import MAX_ENTRIES, MetadataCache


class Loader:
    def __init__(self) -> None:
        self.calls = 0
        self.value: dict[str, object] = {"_max_claim_count": 3}

    def __call__(self) -> dict[str, object]:
        self.calls += 1
        return dict(self.value)


def test_zero_seconds_reads_every_time() -> None:
    cache, load = MetadataCache(0), Loader()
    cache.get("p", "q", load)
    cache.get("p", "q", load)
    assert load.calls == 2


def test_an_entry_is_served_until_it_expires() -> None:
    now = [100.0]
    cache, load = MetadataCache(1.0, clock=lambda: now[0]), Loader()
    assert cache.get("p", "q", load) == {"_max_claim_count": 3}
    load.value = {"_max_claim_count": 5}  # changed through another process
    now[0] = 100.9
    assert cache.get("p", "q", load) == {"_max_claim_count": 3}
    assert load.calls == 1
    now[0] = 101.0
    assert cache.get("p", "q", load) == {"_max_claim_count": 5}
    assert load.calls == 2


def test_forget_and_keys_per_project_and_queue() -> None:
    cache, load = MetadataCache(60.0, clock=lambda: 0.0), Loader()
    cache.get("p", "q", load)
    cache.get("other", "q", load)
    cache.get("p", "q2", load)
    assert load.calls == 3
    cache.forget("p", "q")
    cache.get("p", "q", load)
    cache.get("other", "q", load)
    assert load.calls == 4


def test_the_cache_does_not_grow_without_bound() -> None:
    cache, load = MetadataCache(60.0, clock=lambda: 0.0), Loader()
    for i in range(MAX_ENTRIES + 5):
        cache.get("p", f"q{i}", load)
    assert len(cache._entries) <= MAX_ENTRIES
