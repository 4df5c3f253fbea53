"""No pooling: one storage holds every queue of every project."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zq.pooling.base import PoolDown
from zq.storage.base import Storage
from zq.storage.records import QueueRecord


class SingleBackend:
    """The ``Pools`` resolver without pooling: everything on one backend."""

    NAME = "default"
    per_pool = False

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    def storage_for(self, project: str, queue: str) -> Storage:
        return self._storage

    def pool_of(self, project: str, queue: str) -> str | None:
        return self.NAME

    def place(
        self,
        project: str,
        queue: str,
        *,
        flavor: str | None = None,
        dead_letter_queue: str | None = None,
    ) -> Storage:
        return self._storage

    def place_beside(self, project: str, queue: str, *, beside: str) -> Storage:
        return self._storage

    def link_dead_letter(self, project: str, queue: str, target: str | None) -> None:
        """One backend: every dead letter queue shares its source's pool."""

    def forget(self, project: str, queue: str) -> None:
        """Nothing is registered without pooling."""

    def check_flavor(self, flavor: str) -> None:
        """Without pooling, ``_flavor`` is plain metadata (as in Zaqar)."""

    def list_queues(
        self,
        project: str,
        *,
        marker: str | None,
        limit: int,
        name: str | None,
        detailed: bool,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[QueueRecord]:
        return self._storage.queues.list_matching(
            project, marker=marker, limit=limit, name=name, metadata=metadata or {})

    def count_queues(
        self, project: str, *, name: str | None, metadata: Mapping[str, Any] | None = None
    ) -> int:
        if metadata:
            return self._storage.queues.count_matching(project, name=name, metadata=metadata)
        return self._storage.queues.count(project, name=name)

    def storages(self) -> dict[str, Storage | PoolDown]:
        return {self.NAME: self._storage}

    def close(self) -> None:
        self._storage.close()
