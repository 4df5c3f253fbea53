"""Subscriptions on Redis: a hash each, per-queue indexes, one expiry index.

Every change is one script (sub_*.lua); reads are plain commands, since a
subscription hash is read whole and checked against the clock here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import redis

from zq.clock import Clock
from zq.errors import (
    BACKEND_UNREACHABLE,
    StorageUnavailable,
    SubscriptionConflict,
    SubscriptionNotFound,
)
from zq.storage.records import SubscriptionRecord
from zq.storage.redis.controller import RedisController
from zq.storage.redis.scripts import ScriptBook
from zq.storage.redis.wire import Budget
from zq.storage.subscriptions import SubscriptionController, new_subscription_id, subscription_age

T = TypeVar("T")

# Expired subscriptions removed per gc script run; ids read per list round.
GC_BATCH = 500
PAGE = 100


def _enc(text: str) -> str:
    """lua/_lib.lua's ``enc``: length in bytes, ':', the text."""
    return f"{len(text.encode())}:{text}"


def _options_json(options: dict[str, Any]) -> str:
    return json.dumps(options, separators=(",", ":"), sort_keys=True)


class RedisSubscriptions(RedisController, SubscriptionController):
    def __init__(self, scripts: ScriptBook, clock: Clock, budget: Budget, *,
                 client: redis.Redis, prefix: str) -> None:
        super().__init__(scripts, clock, budget)
        self._client = client
        self._prefix = prefix

    # -- keys (the same as lua/_lib.lua's K.sub*) --------------------------

    # Under the project's home (its hash tag on a cluster, ScriptBook.home).

    def _sub(self, home: str, sid: str) -> str:
        return f"{home}s:{sid}"

    def _ids(self, project: str, queue: str) -> str:
        return f"{self._scripts.home(project)}sq:{_enc(project)}{queue}"

    def _by(self, project: str, queue: str) -> str:
        return f"{self._scripts.home(project)}sb:{_enc(project)}{queue}"

    def _expiry(self, home: str) -> str:
        return f"{home}sx"

    def _read(self, work: Callable[[], T]) -> T:
        try:
            return work()
        except redis.RedisError as exc:
            raise StorageUnavailable(BACKEND_UNREACHABLE, detail=f"Redis: {exc}") from exc

    def _records(self, sids: list[str], now: float, *, home: str, project: str | None = None,
                 queue: str | None = None) -> list[SubscriptionRecord]:
        """The live ones of ``sids`` under ``home`` (of project/queue when given), in order."""
        if not sids:
            return []
        pipe = self._client.pipeline(transaction=False)
        for sid in sids:
            pipe.hgetall(self._sub(home, sid))
        found = []
        for sid, fields in zip(sids, pipe.execute(), strict=True):
            if not fields or float(fields["expires"]) <= now:
                continue
            if project is not None and (fields["project"], fields["queue"]) != (project, queue):
                continue
            found.append(SubscriptionRecord(
                id=sid, project=fields["project"], queue=fields["queue"],
                subscriber=fields["subscriber"], ttl=int(fields["ttl"]),
                expires=float(fields["expires"]), options=json.loads(fields["options"]),
                confirmed=fields["confirmed"] == "1",
                age=subscription_age(float(fields["created"]), now)))
        return found

    # -- the contract -------------------------------------------------------

    def create(
        self, project: str, queue: str, subscriber: str, ttl: int, options: dict[str, Any],
        *, subscription_id: str | None = None,
    ) -> str | None:
        return self._run("sub_create", project, queue, subscriber,
                         subscription_id or new_subscription_id(), int(ttl),
                         _options_json(options))

    def get(self, project: str, queue: str, subscription_id: str) -> SubscriptionRecord:
        now = self._clock.now()
        found = self._read(lambda: self._records([subscription_id], now,
                                                 home=self._scripts.home(project),
                                                 project=project, queue=queue))
        if not found:
            raise SubscriptionNotFound.gone(subscription_id)
        return found[0]

    def find(self, project: str, queue: str, subscriber: str) -> SubscriptionRecord | None:
        now = self._clock.now()

        def work() -> list[SubscriptionRecord]:
            sid = self._client.hget(self._by(project, queue), subscriber)
            return [] if sid is None else self._records([sid], now, project=project,
                                                        queue=queue,
                                                        home=self._scripts.home(project))

        found = self._read(work)
        return found[0] if found else None

    def exists(self, project: str, queue: str, subscription_id: str) -> bool:
        try:
            self.get(project, queue, subscription_id)
        except SubscriptionNotFound:
            return False
        return True

    def list(
        self, project: str, queue: str, *, marker: str | None = None, limit: int = 10
    ) -> list[SubscriptionRecord]:
        now = self._clock.now()
        key = self._ids(project, queue)

        def work() -> list[SubscriptionRecord]:
            # Ids in lexical order (score 0); expired ones not yet collected
            # are skipped, so read on until the page is full.
            page: list[SubscriptionRecord] = []
            start = "-" if marker is None else f"({marker}"
            while len(page) < limit:
                sids = self._client.zrangebylex(key, start, "+", start=0, num=PAGE)
                page += self._records(sids, now, home=self._scripts.home(project),
                                      project=project, queue=queue)
                if len(sids) < PAGE:
                    break
                start = f"({sids[-1]}"
            return page[:limit]

        return self._read(work)

    def update(
        self,
        project: str,
        queue: str,
        subscription_id: str,
        *,
        subscriber: str | None = None,
        ttl: int | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        answer = self._run(
            "sub_update", project, queue, subscription_id, subscriber or "",
            "" if ttl is None else int(ttl), "" if options is None else _options_json(options))
        if answer == 0:
            raise SubscriptionNotFound.gone(subscription_id)
        if answer == -1:
            raise SubscriptionConflict.duplicate()

    def delete(self, project: str, queue: str, subscription_id: str) -> None:
        self._run("sub_delete", project, queue, subscription_id)

    def confirm(
        self, project: str, queue: str, subscription_id: str, *, confirmed: bool
    ) -> None:
        if self._run("sub_confirm", project, queue, subscription_id,
                     "1" if confirmed else "0") == 0:
            raise SubscriptionNotFound.gone(subscription_id)

    def for_queue(self, project: str, queue: str) -> list[SubscriptionRecord]:
        now = self._clock.now()
        return self._read(lambda: self._records(
            self._client.zrange(self._ids(project, queue), 0, -1), now,
            home=self._scripts.home(project), project=project, queue=queue))

    def live(self) -> list[SubscriptionRecord]:
        now = self._clock.now()
        found: list[SubscriptionRecord] = []
        for home in self._scripts.homes():
            found += self._read(lambda home=home: self._records(  # type: ignore[misc]
                self._client.zrangebyscore(self._expiry(home), f"({now!r}", "+inf"), now,
                home=home))
        return sorted(found, key=lambda s: (s.project, s.queue, s.id))

    def collect(self) -> int:
        """Remove expired subscriptions; how many went."""
        removed = 0
        for home, count in self._scripts.run_everywhere("sub_gc", self._clock.now(), GC_BATCH):
            while True:
                removed += int(count)
                if int(count) < GC_BATCH:
                    break
                count = self._scripts.run_in(home, "sub_gc", self._clock.now(), GC_BATCH)
        return removed
