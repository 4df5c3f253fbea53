"""Which backend holds a queue.

The service layer asks a ``Pools`` resolver for the storage of a
``(project, queue)`` and never opens a backend itself. Without pooling,
``SingleBackend`` answers the same storage for everything; real pools and
flavors come later behind the same protocol.
"""

from __future__ import annotations

from typing import Protocol

from zq.storage.base import Storage


class Pools(Protocol):
    """Resolves queues to the backend that holds them."""

    def storage_for(self, project: str, queue: str) -> Storage:
        """The storage holding (or that will hold) this queue."""
        ...

    def storages(self) -> dict[str, Storage]:
        """Every backend, by pool name (for health checks and listings)."""
        ...

    def close(self) -> None:
        """Release every backend's connections."""
        ...


class SingleBackend:
    """No pooling: one storage holds every queue of every project."""

    NAME = "default"

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    def storage_for(self, project: str, queue: str) -> Storage:
        return self._storage

    def storages(self) -> dict[str, Storage]:
        return {self.NAME: self._storage}

    def close(self) -> None:
        self._storage.close()
