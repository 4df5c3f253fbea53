"""The breaker on Redis (zq.storage.breakers): read and forced by scripts.

The record and the window's outcomes live beside the queue's other keys
(lua/_breaker.lua); the reject, delete, claim, pop and move scripts change
them in their own steps. Only reading, forcing and clearing ``redrive_due``
are calls of their own.
"""

from __future__ import annotations

from typing import Any

from zq.poison.breaker import BreakerPolicy
from zq.storage.breakers import BreakerLog, BreakerState
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.redis.controller import RedisController
from zq.storage.redis.wire import breaker_args


def _state(row: list[Any]) -> BreakerState:
    """``breaker_state``'s answer in lua/_breaker.lua."""
    state, since, description, tripped, closed, due, outage = row
    return BreakerState(
        state=state,
        since=float(since),
        description=description,  # a Lua false arrives as None
        tripped_at=float(tripped) if tripped else None,
        closed_at=float(closed) if closed else None,
        redrive_due=bool(int(due)),
        outage_description=outage,
    )


class RedisBreakers(RedisController, BreakerLog):
    def read(self, project: str, queue: str, policy: BreakerPolicy, now: float) -> BreakerState:
        return _state(self._scripts.run("breaker_read", now, project, queue, policy.window))

    def force(self, project: str, queue: str, state: str, policy: BreakerPolicy,
              now: float) -> BreakerState:
        return _state(self._scripts.run("breaker_force", now, project, queue, state,
                                        *breaker_args(DeliveryRules(breaker=policy))))

    def due_redrives(self) -> list[tuple[str, str]]:
        due: list[tuple[str, str]] = []
        for _, flat in self._scripts.run_everywhere("breaker_due", self._clock.now()):
            due += zip(flat[0::2], flat[1::2], strict=True)
        return due

    def redrive_done(self, project: str, queue: str, closed_at: float) -> None:
        self._scripts.run("breaker_redrive_done", self._clock.now(), project, queue,
                          repr(float(closed_at)))
