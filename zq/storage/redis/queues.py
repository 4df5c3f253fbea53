"""Queues on Redis: a catalog hash, one hash per queue, a name index per project."""

from __future__ import annotations

import json
from typing import Any

from zq.errors import QueueNotFound
from zq.storage.base import QueueController
from zq.storage.records import (
    MISSING_VERSION,
    MessageStamp,
    MetadataRead,
    QueueRecord,
    QueueStats,
)
from zq.storage.redis.controller import RedisController
from zq.storage.redis.settle import read_settled
from zq.storage.redis.wire import check_fresh, expiry_arg, optional, version_arg


def _metadata_json(metadata: dict[str, Any]) -> str:
    return json.dumps(metadata, separators=(",", ":"))


class RedisQueues(RedisController, QueueController):
    def create(
        self,
        project: str,
        queue: str,
        metadata: dict[str, Any],
        *,
        links_version: str | None = None,
    ) -> bool:
        return check_fresh(self._run(
            "queue_create", project, queue, _metadata_json(metadata), version_arg(links_version),
            expiry_arg(queue, metadata),
        )) == 1

    def exists(self, project: str, queue: str) -> bool:
        return self._run("queue_get", project, queue) is not None

    def get_metadata(self, project: str, queue: str) -> dict[str, Any]:
        found = self._run("queue_get", project, queue)
        if found is None:
            raise QueueNotFound.gone(queue)
        return json.loads(found[0])

    def read_metadata(self, project: str, queue: str) -> MetadataRead:
        found = self._run("queue_get", project, queue)
        if found is None:
            return MetadataRead({}, MISSING_VERSION)
        return MetadataRead(json.loads(found[0]), found[1])

    def set_metadata(
        self,
        project: str,
        queue: str,
        metadata: dict[str, Any],
        *,
        expected_version: str | None = None,
        links_version: str | None = None,
    ) -> None:
        written = check_fresh(self._run(
            "queue_set_metadata", project, queue, _metadata_json(metadata),
            version_arg(expected_version), version_arg(links_version),
            expiry_arg(queue, metadata),
        ))
        if written != 1:
            raise QueueNotFound.gone(queue)

    def links_version(self, project: str) -> str:
        return str(self._run("links_version", project))

    def delete(self, project: str, queue: str) -> None:
        self._run("queue_delete", project, queue)

    def list(
        self,
        project: str,
        *,
        marker: str | None = None,
        limit: int = 10,
        name: str | None = None,
    ) -> list[QueueRecord]:
        flat = self._run("queue_list", project, optional(marker), limit, optional(name))
        return [QueueRecord(name=flat[i], metadata=json.loads(flat[i + 1]))
                for i in range(0, len(flat), 2)]

    def count(self, project: str, *, name: str | None = None) -> int:
        return int(self._run("queue_count", project, optional(name)))

    def stats(self, project: str, queue: str) -> QueueStats:
        free, claimed, old_id, old_at, new_id, new_at, delayed = read_settled(
            self._scripts, self._clock, self._budget, "queue_stats", project, queue)
        if not old_id:
            return QueueStats(free=int(free), claimed=int(claimed))
        return QueueStats(
            free=int(free),
            claimed=int(claimed),
            delayed=int(delayed),
            oldest=MessageStamp(id=old_id, created=float(old_at)),
            newest=MessageStamp(id=new_id, created=float(new_at)),
        )

    def volume(self) -> QueueStats:
        free = claimed = 0
        for _, (home_free, home_claimed) in self._scripts.run_everywhere(
                "message_volume", self._clock.now()):
            free, claimed = free + int(home_free), claimed + int(home_claimed)
        return QueueStats(free=free, claimed=claimed)

    def purge(self, project: str, queue: str) -> None:
        self._run("purge", project, queue)
