"""When a queue may next be claimed from, for waiting claims (zq.storage.wakeups)."""

from __future__ import annotations

from collections.abc import Callable, Collection

import redis

from zq.clock import Clock
from zq.storage.redis.controller import RedisController
from zq.storage.redis.scripts import ScriptBook
from zq.storage.redis.wake import RedisWakeListener
from zq.storage.redis.wire import Budget
from zq.storage.wakeups import QueueKey, WakeCallback, WakeListener, Wakeups

# Queues per script call: one call reads a few keys per queue, and a long
# one would hold Redis (single-threaded) from other clients meanwhile.
KEYS_PER_CALL = 200


class RedisWakeups(RedisController, Wakeups):
    def __init__(self, scripts: ScriptBook, clock: Clock, budget: Budget, *,
                 client: redis.Redis, prefix: str) -> None:
        super().__init__(scripts, clock, budget)
        self._client = client
        self._prefix = prefix

    def earliest_claimable(self, keys: Collection[QueueKey]) -> dict[QueueKey, float]:
        by_home: dict[str, list[QueueKey]] = {}
        for key in dict.fromkeys(keys):
            by_home.setdefault(self._scripts.home(key[0]), []).append(key)
        found: dict[QueueKey, float] = {}
        for home, listed in by_home.items():
            for start in range(0, len(listed), KEYS_PER_CALL):
                batch = listed[start:start + KEYS_PER_CALL]
                moments = self._scripts.run_in(home, "claimable_at", self._clock.now(),
                                               *(part for key in batch for part in key))
                found.update({key: float(moment)
                              for key, moment in zip(batch, moments, strict=True)
                              if moment != ""})
        return found

    def listen(
        self, wake: WakeCallback, wake_all: Callable[[], None] | None = None
    ) -> WakeListener | None:
        """SUBSCRIBE to the scripts' wake-ups (zq.storage.redis.wake)."""
        return RedisWakeListener(self._client, self._prefix, wake, wake_all).start()
