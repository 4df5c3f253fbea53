"""Notification cursors on Redis: a hash per subscription, the lease taken in one script.

Keys: ``<prefix>ncursor:<id>`` (fields ``cursor``, ``owner``, ``until``)
and the set ``<prefix>ncursors`` of subscription ids (for ``positions``).
Each operation is one Lua script, so a lease check and its write are
atomic.
"""

from __future__ import annotations

import redis

from zq.clock import Clock
from zq.storage.cursors import CursorLease, NotificationCursors

_ACQUIRE = """
local key, index, id, owner = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local now, till = tonumber(ARGV[3]), ARGV[4]
local holder = redis.call('HGET', key, 'owner')
if holder and holder ~= owner and tonumber(redis.call('HGET', key, 'until')) >= now then
  return false
end
redis.call('HSET', key, 'owner', owner, 'until', till)
redis.call('SADD', index, id)
local cursor = redis.call('HGET', key, 'cursor')
return {cursor or ''}
"""

_ADVANCE = """
local key, owner, cursor, till = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
if redis.call('HGET', key, 'owner') ~= owner then return 0 end
redis.call('HSET', key, 'cursor', cursor, 'until', till)
return 1
"""

_START = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'cursor', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""

_RELEASE = """
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then redis.call('HSET', KEYS[1], 'until', 0) end
return 0
"""


class RedisNotificationCursors(NotificationCursors):
    def __init__(self, client: redis.Redis, prefix: str, clock: Clock) -> None:
        self._client = client
        self._prefix = prefix
        self._clock = clock
        self._acquire = client.register_script(_ACQUIRE)
        self._advance = client.register_script(_ADVANCE)
        self._release = client.register_script(_RELEASE)
        self._start = client.register_script(_START)

    def _key(self, subscription_id: str) -> str:
        return f"{self._prefix}ncursor:{subscription_id}"

    @property
    def _index(self) -> str:
        return f"{self._prefix}ncursors"

    def acquire(self, subscription_id: str, owner: str, lease_seconds: float) -> CursorLease | None:
        now = self._clock.now()
        until = now + lease_seconds
        found = self._acquire(keys=[self._key(subscription_id), self._index],
                              args=[subscription_id, owner, repr(now), repr(until)])
        if not found:
            return None
        cursor = _text(found[0]) or None
        return CursorLease(subscription_id, cursor, owner, until)

    def start(self, subscription_id: str, cursor: str) -> None:
        self._start(keys=[self._key(subscription_id), self._index], args=[subscription_id, cursor])

    def advance(self, subscription_id: str, owner: str, cursor: str, lease_seconds: float) -> bool:
        until = self._clock.now() + lease_seconds
        return bool(self._advance(keys=[self._key(subscription_id)],
                                  args=[owner, cursor, repr(until)]))

    def release(self, subscription_id: str, owner: str) -> None:
        self._release(keys=[self._key(subscription_id)], args=[owner])

    def positions(self) -> dict[str, str | None]:
        ids = sorted(_text(i) for i in self._client.smembers(self._index))
        found: dict[str, str | None] = {}
        for subscription_id in ids:
            cursor = self._client.hget(self._key(subscription_id), "cursor")
            found[subscription_id] = _text(cursor) if cursor else None
        return found

    def forget(self, subscription_id: str) -> None:
        pipe = self._client.pipeline(transaction=True)
        pipe.delete(self._key(subscription_id))
        pipe.srem(self._index, subscription_id)
        pipe.execute()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
