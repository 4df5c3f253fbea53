"""What every Redis controller holds: the scripts, the driver's clock, the work budget."""

from __future__ import annotations

from typing import Any

from zq.clock import Clock
from zq.storage.redis.scripts import ScriptBook
from zq.storage.redis.wire import Budget


class RedisController:
    """The base of the Redis controllers (queues, messages, claims, events, ...)."""

    def __init__(self, scripts: ScriptBook, clock: Clock, budget: Budget) -> None:
        self._scripts = scripts
        self._clock = clock
        self._budget = budget

    def _run(self, name: str, *args: Any) -> Any:
        """Script ``name``'s answer, called at the clock's now."""
        return self._scripts.run(name, self._clock.now(), *args)
