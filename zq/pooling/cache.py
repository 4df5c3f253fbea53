"""A per-process cache of ``(project, queue) -> Location``, checked per use.

Several server processes share one management store, so a process cannot
trust what it cached: another worker may have deleted the queue (and
placed a new one of the same name elsewhere) or removed the pool. Every
lookup therefore reads the store's generation first (one primary-key read
of a one-row table) and drops the whole cache when it moved; a change that
makes a mapping false grows the generation in the same transaction (see
zq.pooling.generation). A mapping is stored with the generation read
*before* it was looked up, so a change racing with the lookup is caught by
the next check. New registrations never invalidate anything: an absent
mapping is never cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

DEFAULT_CAPACITY = 10_000


class GenerationCache(Generic[K, V]):
    """A bounded LRU map that empties itself when the generation moves."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._generation: int | None = None
        self._lock = threading.Lock()

    def get(self, key: K, generation: int) -> V | None:
        """The cached value if it was stored at this generation."""
        with self._lock:
            self._sync(generation)
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V, generation: int) -> None:
        """Remember ``value``, read after ``generation`` was read."""
        with self._lock:
            self._sync(generation)
            if self._generation != generation:
                return  # the store moved on while we looked: do not cache
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def discard(self, key: K) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)

    def _sync(self, generation: int) -> None:
        if self._generation is None or generation > self._generation:
            self._entries.clear()
            self._generation = generation
