"""A short-lived, per-process cache of stored queue metadata.

Posting and claiming read the queue's metadata (defaults, post size, the
dead letter policy) before they act: one extra backend round trip each.
With ``[server] metadata_cache`` seconds > 0 a worker remembers what it read
for that long. The process that changes or deletes a queue forgets its
entry at once; a change made through another process is seen after at
most ``seconds``. 0 (the default) reads the metadata every time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# Past this many queues the cache starts again empty, rather than grow.
MAX_ENTRIES = 10000


class MetadataCache:
    """Stored metadata by (project, queue), each kept ``seconds``."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._entries: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}

    def get(self, project: str, queue: str,
            load: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The cached metadata, or ``load()``'s answer (remembered) when none is fresh."""
        if self.seconds <= 0:
            return load()
        key = (project, queue)
        now = self._clock()
        found = self._entries.get(key)
        if found is not None and found[0] > now:
            return found[1]
        metadata = load()
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[key] = (now + self.seconds, metadata)
        return metadata

    def forget(self, project: str, queue: str) -> None:
        """Drop one queue's entry (this process changed or deleted it)."""
        self._entries.pop((project, queue), None)
