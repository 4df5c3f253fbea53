"""The resolver protocol: which backend holds a queue.

The service layer asks a ``Pools`` resolver for the storage of a
``(project, queue)`` and never opens a backend itself. Two resolvers
implement it: ``SingleBackend`` (no pooling: one storage holds everything)
and ``CatalogPools`` (pools, flavors and the catalog in a management store).

The resolver, not the service, knows where queues live, so it is also the
one place that keeps the pool rule of dead letter queues: a queue, its dead
letter queue and every other queue dead lettering into the same queue live
on one pool (``place`` and ``link_dead_letter`` refuse anything else).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from zq.storage.base import QueueRecord, Storage


class Pools(Protocol):
    """Resolves queues to the backend that holds them."""

    per_pool: bool  # whether health and similar reports are keyed by pool

    def storage_for(self, project: str, queue: str) -> Storage:
        """The storage holding this queue.

        For a queue that is not registered anywhere, a storage on which
        reads find nothing (the queue exists in no backend).
        """
        ...

    def pool_of(self, project: str, queue: str) -> str | None:
        """The pool holding the queue; None when it is not registered."""
        ...

    def place(
        self,
        project: str,
        queue: str,
        *,
        flavor: str | None = None,
        dead_letter_queue: str | None = None,
        beside: str | None = None,
    ) -> Storage:
        """Register the queue (unless it is registered) and return its storage.

        ``flavor`` is the new queue's ``_flavor`` (InvalidRequest when it
        names no flavor); ``dead_letter_queue`` its ``_dead_letter_queue``;
        ``beside`` a queue whose pool it must share (the source of a dead
        letter queue). DeadLetterConflict when those pull it to two pools.
        """
        ...

    def link_dead_letter(self, project: str, queue: str, target: str | None) -> None:
        """Record that ``queue`` dead letters into ``target`` (None: into nothing).

        DeadLetterConflict, naming both pools, when ``target`` lives on
        (or is bound to) another pool than ``queue``.
        """
        ...

    def forget(self, project: str, queue: str) -> None:
        """The queue was deleted: drop its registration."""
        ...

    def check_flavor(self, flavor: str) -> None:
        """InvalidRequest unless ``flavor`` names a flavor (when pooling is on)."""
        ...

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
        """Queues by name after ``marker``, across every pool (metadata if detailed).

        With ``metadata``, only queues whose metadata matches it
        (zq.queue_filter), still ``limit`` of them after ``marker``.
        """
        ...

    def count_queues(
        self, project: str, *, name: str | None, metadata: Mapping[str, Any] | None = None
    ) -> int:
        """How many queues ``list_queues`` would return without paging."""
        ...

    def storages(self) -> dict[str, Storage]:
        """Every backend, by pool name (for health checks, ping and gc)."""
        ...

    def close(self) -> None:
        """Release every backend's connections."""
        ...
