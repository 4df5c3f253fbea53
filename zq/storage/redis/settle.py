"""Calling scripts that may answer AGAIN (their work budget ran out).

A write script (claim, pop) that answers AGAIN committed its share of the
queue's upkeep and is simply called again. The read scripts (stats, list)
answer AGAIN when the queue's sets are not exact at the current time
(expired messages not yet removed, claims or delays ended but their
messages not yet ready): the settle script then brings them up to date,
one bounded call at a time, and the read runs again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from zq.clock import Clock
from zq.errors import StorageUnavailable
from zq.storage.redis.scripts import ScriptBook
from zq.storage.redis.wire import AGAIN, Budget


def run_until_done(scripts: ScriptBook, clock: Clock, name: str,
                   args: Callable[[float], Sequence[Any]]) -> tuple[float, Any]:
    """(time, answer) of script ``name``'s first answer that is not AGAIN.

    ``args(now)`` gives the arguments of each call.
    """
    while True:
        now = clock.now()
        answer = scripts.run(name, now, *args(now))
        if answer != AGAIN:
            return now, answer


# Reads in a row that ask for settling when the settle script found nothing
# to do: only a disagreement between the scripts (a bug) gets there, and it
# is reported instead of looping forever.
MOST_IDLE_SETTLES = 3


def read_settled(scripts: ScriptBook, clock: Clock, budget: Budget, name: str,
                 project: str, queue: str, *args: Any) -> Any:
    """Read script ``name``'s answer on a settled queue, settling it first when asked."""
    idle = 0
    while True:
        answer = scripts.run(name, clock.now(), project, queue, *args)
        if answer != AGAIN:
            return answer
        calls = 1
        while scripts.run("settle", clock.now(), project, queue, *budget.args()) == 0:
            calls += 1
        idle = idle + 1 if calls == 1 else 0
        if idle > MOST_IDLE_SETTLES:
            raise StorageUnavailable(
                f"Redis script {name} keeps finding queue {queue!r} unsettled after the "
                "settle script found nothing to do."
            )
