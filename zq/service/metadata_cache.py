"""A per-process cache of stored queue metadata.

Posting, claiming and popping read the queue's metadata (defaults, post
size, the dead letter policy) before they act: one extra backend round trip
each. This cache removes it where that is safe:

- A driver whose deliveries check the metadata version
  (``Storage.checks_metadata_version``, the Redis driver) checks
  it in the same atomic step as the post, claim or pop, and refuses a
  stale one (MetadataChanged); the service then reads again. Such reads
  are kept until forgotten: they are never acted on once stale, whichever
  process changed the metadata.
- Other drivers' reads are kept ``seconds`` (``[server] metadata_cache``;
  0, the default, reads every time). The process that changes or deletes a
  queue forgets its entry at once; a change made through another process
  is seen after at most ``seconds``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from zq.storage.base import Storage
from zq.storage.records import MetadataRead

# Past this many queues the cache starts again empty, rather than grow.
MAX_ENTRIES = 10000


@dataclass(frozen=True, slots=True)
class CachedRead:
    read: MetadataRead
    hit: bool  # from the cache, not read from the backend just now


class MetadataCache:
    """Stored metadata by (project, queue), with the storage it was read from."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic, *,
                 versioned: bool = True) -> None:
        """``versioned`` False: every read is kept ``seconds``, also from a driver
        that checks versions (for a reader whose step checks none)."""
        self.seconds = seconds
        self._clock = clock
        self._versioned = versioned
        # Each entry keeps the CachedRead a hit returns, built once: every
        # post, claim and pop asks, and a frozen dataclass costs 0.6 us to make.
        self._entries: dict[tuple[str, str], tuple[float, Storage, CachedRead]] = {}

    def get(self, storage: Storage, project: str, queue: str) -> CachedRead:
        """The queue's metadata from the cache, or read from ``storage`` (and kept)."""
        key = (project, queue)
        now = self._clock()
        found = self._entries.get(key)
        if found is not None and found[0] > now and found[1] is storage:
            return found[2]
        read = storage.queues.read_metadata(project, queue)
        if storage.checks_metadata_version and self._versioned:
            until = math.inf
        elif self.seconds > 0:
            until = now + self.seconds
        else:
            return CachedRead(read, hit=False)
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[key] = (until, storage, CachedRead(read, hit=True))
        return CachedRead(read, hit=False)

    def forget(self, project: str, queue: str) -> None:
        """Drop one queue's entry (changed or deleted here, or found stale)."""
        self._entries.pop((project, queue), None)
