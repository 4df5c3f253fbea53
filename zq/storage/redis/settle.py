"""Running a read script on a settled queue.

The stats and list scripts only read, and answer AGAIN when the queue's sets
are not exact at the current time (expired messages not yet removed, claims
or delays ended but their messages not yet ready). The settle script then
brings them up to date, one bounded call at a time, and the read runs again.
"""

from __future__ import annotations

from typing import Any

from zq.clock import Clock
from zq.storage.redis.scripts import ScriptBook
from zq.storage.redis.wire import AGAIN, Budget


def read_settled(scripts: ScriptBook, clock: Clock, budget: Budget, name: str,
                 project: str, queue: str, *args: Any) -> Any:
    """Script ``name``'s answer on a settled queue, settling it first when asked."""
    while True:
        answer = scripts.run(name, clock.now(), project, queue, *args)
        if answer != AGAIN:
            return answer
        while scripts.run("settle", clock.now(), project, queue, *budget.args()) == 0:
            pass
