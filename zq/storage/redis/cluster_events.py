"""The event log on Redis Cluster: one stream per home, drained into one log.

A script appends its events to the stream of its home (its bucket's hash
tag, zq/storage/redis/cluster.py), in the same step as the change, as on
one server. Readers (``zq events export``, the notifier, metrics) read one
log: before each read, what the home streams hold beyond their drained
position is appended to the log stream ``P{events}:events`` by
``events_absorb.lua``, which records the new position in the same script
(``P{events}:drained``, bucket -> last drained id); a batch drained by
another process meanwhile is refused there and read again from the
recorded position, so nothing is appended twice. The log is append-only
and its ids are assigned in one stream, so a reader after a cursor never
skips an event (``final_order``): every event of a home comes after the
home's earlier events, and an event drained later comes after every
event drained before it. Events of different homes are in drain order,
not in the (unrelated) order of their commits on different nodes.

A home's stream is trimmed up to its drained position when the log is
trimmed (after export), so an event stays in its home's stream until the
log holds it and the export has been written.
"""

from __future__ import annotations

from typing import Any

import redis

from zq.clock import Clock
from zq.errors import BACKEND_UNREACHABLE, StorageUnavailable
from zq.storage.records import Event
from zq.storage.redis.cluster import events_home, home_of
from zq.storage.redis.events import RedisEventLog, next_stream_id
from zq.storage.redis.scripts import ScriptBook
from zq.storage.redis.wire import Budget

# Events appended per events_absorb call.
DRAIN_BATCH = 500


def _bucket(home: str) -> str:
    """The bucket named by a home's hash tag (``prefix{b}:`` -> ``b``)."""
    return home[home.index("{") + 1:home.index("}")]


class ClusterEventLog(RedisEventLog):
    """The drained log (module documentation)."""

    def __init__(self, scripts: ScriptBook, clock: Clock, budget: Budget, *,
                 client: redis.Redis, prefix: str) -> None:
        super().__init__(scripts, clock, budget)
        self._client = client
        self._prefix = prefix
        self._home = events_home(prefix)

    def _run(self, name: str, *args: Any) -> Any:
        return self._scripts.run_in(self._home, name, self._clock.now(), *args)

    def _positions(self) -> dict[str, str]:
        return dict(self._client.hgetall(self._home + "drained"))

    def drain(self) -> int:
        """Append what the homes' streams hold beyond their drained positions; how many."""
        try:
            return self._drain()
        except redis.RedisError as exc:
            raise StorageUnavailable(BACKEND_UNREACHABLE, detail=f"Redis: {exc}") from exc

    def _drain(self) -> int:
        homes = self._scripts.homes()
        positions = self._positions()
        # The first page of every home in one round trip per node.
        pipe = self._client.pipeline(transaction=False)
        starts = [positions.get(_bucket(home), "") for home in homes]
        for home, after in zip(homes, starts, strict=True):
            pipe.xrange(home + "events", f"({after}" if after else "-", "+", count=DRAIN_BATCH)
        absorbed = 0
        for home, after, rows in zip(homes, starts, pipe.execute(), strict=True):
            bucket = _bucket(home)
            # ``after`` is always the position ``rows`` were read after: the
            # script appends them only if it is still the recorded one.
            while rows:
                flat: list[Any] = [len(rows)]
                for _, fields in rows:
                    flat += [2 * len(fields), *(part for pair in fields.items() for part in pair)]
                if self._run("events_absorb", bucket, after, rows[-1][0], *flat):
                    absorbed += len(rows)
                    if len(rows) < DRAIN_BATCH:
                        break
                    after = rows[-1][0]
                else:
                    after = self._positions().get(bucket, "")
                rows = self._client.xrange(home + "events", f"({after}" if after else "-", "+",
                                           count=DRAIN_BATCH)
        return absorbed

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        self.drain()
        return super().read(after=after, limit=limit)

    def count(self, *, after: str | None = None) -> int:
        self.drain()
        return super().count(after=after)

    def end(self) -> str | None:
        self.drain()
        return super().end()

    def trim(self, *, up_to: str) -> int:
        removed = super().trim(up_to=up_to)
        try:
            # Drained events are in the log: their homes' copies can go.
            for bucket, position in self._positions().items():
                self._client.xtrim(home_of(self._prefix, bucket) + "events",
                                   minid=next_stream_id(position), approximate=False)
        except redis.RedisError as exc:
            raise StorageUnavailable(BACKEND_UNREACHABLE, detail=f"Redis: {exc}") from exc
        return removed
