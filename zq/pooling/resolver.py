"""``CatalogPools``: the ``Pools`` resolver over the management store.

Each request resolves its queue through the catalog (cached per process,
checked against the store's generation on every lookup, see
zq.pooling.cache) and gets the storage of that pool, opened once per
process and reopened when the pool's URI changes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from zq import queue_filter
from zq.clock import Clock, SystemClock
from zq.errors import InvalidRequest, NoPoolAvailable, QueueNotFound, ZqError
from zq.pooling.base import PoolDown
from zq.pooling.cache import GenerationCache
from zq.pooling.catalog import Location
from zq.pooling.store import ManagementStore
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.records import QueueRecord

Opener = Callable[[str, Clock], Storage]


def _open(uri: str, clock: Clock) -> Storage:
    return open_storage(uri, clock=clock)


class CatalogPools:
    """Queues spread over pools; where each lives is in the catalog."""

    per_pool = True

    def __init__(
        self,
        store: ManagementStore,
        *,
        clock: Clock | None = None,
        opener: Opener = _open,
        cache: GenerationCache[tuple[str, str], Location] | None = None,
    ) -> None:
        self.store = store
        self._clock = clock or SystemClock()
        self._opener = opener
        self._cache = cache if cache is not None else GenerationCache()
        self._backends: dict[str, tuple[str, Storage]] = {}
        self._retired: list[Storage] = []
        self._lock = threading.Lock()

    # -- resolving ------------------------------------------------------

    def locate(self, project: str, queue: str) -> Location | None:
        """Where the queue lives, through the cache; None when unregistered."""
        return self._located(project, queue, self.store.catalog.generation())

    def _located(self, project: str, queue: str, generation: int) -> Location | None:
        key = (project, queue)
        hit = self._cache.get(key, generation)
        if hit is not None:
            return hit
        found = self.store.catalog.lookup(project, queue)
        if found is not None:
            self._cache.put(key, found, generation)
        return found

    def storage_for(self, project: str, queue: str) -> Storage:
        location = self.locate(project, queue) or self.store.catalog.any_pool()
        if location is None:
            raise NoPoolAvailable(
                "No pool is registered yet: pooling is on, so queues need one "
                "(PUT /v2/pools/{name})."
            )
        return self.backend(location)

    def pool_of(self, project: str, queue: str) -> str | None:
        location = self.locate(project, queue)
        return None if location is None else location.pool

    def place(
        self,
        project: str,
        queue: str,
        *,
        flavor: str | None = None,
        dead_letter_queue: str | None = None,
    ) -> Storage:
        location = self.locate(project, queue)
        if location is None:
            location = self.store.catalog.place(
                project, queue, flavor=flavor, dead_letter_queue=dead_letter_queue
            )
        elif dead_letter_queue is not None:
            # Registered earlier (e.g. as someone's dead letter queue).
            self.store.catalog.link_dead_letter(project, queue, dead_letter_queue)
        return self.backend(location)

    def place_beside(self, project: str, queue: str, *, beside: str) -> Storage:
        location = self.locate(project, queue)
        if location is None:
            location = self.store.catalog.place(project, queue, beside=beside)
        return self.backend(location)

    def link_dead_letter(self, project: str, queue: str, target: str | None) -> None:
        self.store.catalog.link_dead_letter(project, queue, target)

    def forget(self, project: str, queue: str) -> None:
        self.store.catalog.forget(project, queue)
        self._cache.discard((project, queue))

    def check_flavor(self, flavor: str) -> None:
        if not self.store.catalog.flavor_exists(flavor):
            raise InvalidRequest(f"_flavor {flavor!r} names no flavor.")

    # -- listings -------------------------------------------------------

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
        if metadata:
            return queue_filter.matching_page(
                self._described(project, name), marker=marker, limit=limit, wanted=metadata)
        if not detailed:
            entries = self.store.catalog.list(project, marker=marker, limit=limit, name=name)
            return [QueueRecord(queue, {}) for queue, _ in entries]
        return self._described(project, name)(marker, limit)

    def count_queues(
        self, project: str, *, name: str | None, metadata: Mapping[str, Any] | None = None
    ) -> int:
        if metadata:
            return queue_filter.count_matching(self._described(project, name), metadata)
        return self.store.catalog.count(project, name=name)

    def _described(
        self, project: str, name: str | None
    ) -> Callable[[str | None, int], list[QueueRecord]]:
        """Pages of the catalog's queues with their metadata, read from their pools."""

        def page(after: str | None, size: int) -> list[QueueRecord]:
            entries = self.store.catalog.list(project, marker=after, limit=size, name=name)
            return [QueueRecord(queue, self._metadata(project, queue, location))
                    for queue, location in entries]

        return page

    def _metadata(self, project: str, queue: str, location: Location) -> dict:
        try:
            return self.backend(location).queues.get_metadata(project, queue)
        except QueueNotFound:  # registered, not yet created (a lazy queue)
            return {}

    # -- backends -------------------------------------------------------

    def backend(self, location: Location) -> Storage:
        """This process's storage of a pool, opened on first use."""
        with self._lock:
            known = self._backends.get(location.pool)
            if known is not None and known[0] == location.uri:
                return known[1]
            storage = self._opener(location.uri, self._clock)
            if known is not None:
                # The pool now points elsewhere; requests in flight may still
                # use the old storage, so it is closed only at shutdown.
                self._retired.append(known[1])
            self._backends[location.pool] = (location.uri, storage)
            return storage

    def storages(self) -> dict[str, Storage | PoolDown]:
        found: dict[str, Storage | PoolDown] = {}
        for pool in self.store.registry.list_pools():
            try:
                found[pool.name] = self.backend(Location(pool.name, pool.uri))
            except ZqError as error:
                found[pool.name] = PoolDown(str(error))
            except Exception as error:  # a driver's own connection error
                found[pool.name] = PoolDown(f"{type(error).__name__}: {error}")
        return found

    def close(self) -> None:
        with self._lock:
            for _, storage in self._backends.values():
                storage.close()
            for storage in self._retired:
                storage.close()
            self._backends.clear()
            self._retired.clear()
        self.store.close()
