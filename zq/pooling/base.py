"""The resolver protocol: which backend holds a queue.

The service layer asks a ``Pools`` resolver for the storage of a
``(project, queue)`` and never opens a backend itself. Two resolvers
implement it: ``SingleBackend`` (no pooling: one storage holds everything)
and ``CatalogPools`` (pools, flavors and the catalog in a management store).

The resolver, not the service, knows where queues live, so it is also the
one place that keeps the pool rule of dead letter queues: a queue, its dead
letter queue and every other queue dead lettering into the same queue live
on one pool. The rule is checked, and the dead letter queue registered beside its
source, when metadata is written (``place`` and ``link_dead_letter``, kept
in one function of zq.pooling.catalog); a delivery never checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from zq.storage.base import Storage
from zq.storage.records import QueueRecord


@dataclass(frozen=True, slots=True)
class PoolDown:
    """A pool whose backend could not be opened, and why (health shows it down)."""

    reason: str


# What gc, metrics and health walk: the backends by pool name, now.
StorageSource = Callable[[], Mapping[str, "Storage | PoolDown"]]


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
    ) -> Storage:
        """Register the queue (unless it is registered) and return its storage.

        ``flavor`` is the new queue's ``_flavor`` (InvalidRequest when it
        names no flavor); ``dead_letter_queue`` its ``_dead_letter_queue``,
        linked as ``link_dead_letter`` does, whether the queue is new or
        not. DeadLetterConflict when those pull it to two pools.
        """
        ...

    def place_beside(self, project: str, queue: str, *, beside: str) -> Storage:
        """Register the queue (unless it is) on the pool of queue ``beside``; its storage.

        For a queue a move creates (a redrive's missing destination): it
        must live where the messages are. The placement rules still apply
        (DeadLetterConflict when queues dead lettering into it live on
        another pool).
        """
        ...

    def link_dead_letter(self, project: str, queue: str, target: str | None) -> None:
        """Record that ``queue`` dead letters into ``target`` (None: into nothing).

        ``target`` is registered on ``queue``'s pool when it is not
        registered yet (a dead letter move creates it there), and stays
        registered while a queue dead letters into it, even when deleted.
        DeadLetterConflict, naming both pools, when ``target`` lives on (or
        is bound to) another pool than ``queue``. A delivery therefore
        never checks the rule: it holds from the metadata write on.
        """
        ...

    def forget(self, project: str, queue: str) -> None:
        """The queue was deleted: drop its registration (kept while others dead letter into it)."""
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

    def storages(self) -> dict[str, Storage | PoolDown]:
        """Every backend by pool name, or why it could not be opened (health, ping, gc)."""
        ...

    def close(self) -> None:
        """Release every backend's connections."""
        ...
