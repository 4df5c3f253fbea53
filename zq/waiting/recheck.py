"""The re-check: one look per interval at every queue this worker's claims wait on.

Once per ``interval`` (``[server] wait_recheck_interval``), on a thread of
its own, one ``Storage.wakeups.earliest_claimable`` query per backend for
all the waited queues together, however many requests wait on them. A
queue with a claimable message is woken; one whose next message becomes
claimable within the interval (a ``delay``, a backoff, a claim that
lapses) gets a timer for that moment. This is how a waiting claim learns of
a message another worker or server made claimable on a backend without
notifications (at most one interval late), and of a delay or expiry that
passes (at its moment).

The same thread starts each backend's listener (``Storage.wakeups.listen``)
once, where the driver has one: its reports go straight to
``WaitingClaims.wake_threadsafe``, and the re-check remains as the safety
net for a report lost on the way. Listening starts at the worker's first
waiting claim, not with the worker: a listener hears every post, release
and retry of its backend, which cost a worker that never has a waiting claim
about 60 us of CPU per post of 10 on Redis (docs/benchmarks.md). Once
listening, it looks at the waited queues at once, for what was made
claimable before it was.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from zq.clock import Clock
from zq.storage.base import Storage
from zq.storage.wakeups import QueueKey, WakeListener

log = logging.getLogger("zq.waiting")


class WaitingClaims(Protocol):
    """What the re-check uses of zq.waiting.waiters.WaitingClaims."""

    closing: bool
    queues: Collection[QueueKey]

    def wake(self, key: QueueKey) -> None: ...

    def wake_threadsafe(self, project: str, queue: str) -> None: ...

    def wake_all_threadsafe(self) -> None: ...

    def forget_recent(self, now: float) -> None: ...


class Recheck:
    """The periodic look (module documentation) and the backends' listeners."""

    def __init__(self, *, storage_for: Callable[[str, str], Storage],
                 storages: Callable[[], Iterable[Storage]], interval: float,
                 clock: Clock) -> None:
        self.storage_for = storage_for
        self.storages = storages
        self.interval = interval
        self.clock = clock
        self.listeners: dict[int, WakeListener | None] = {}  # by id(storage)
        self.timers: dict[QueueKey, asyncio.TimerHandle] = {}
        self.looks = 0  # queries made (tests and metrics)
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="zq-wait-recheck")
        self._listening: asyncio.Task[None] | None = None  # from the first waiting claim

    def waiting(self, claims: WaitingClaims, loop: asyncio.AbstractEventLoop) -> None:
        """On ``loop``: a claim waits; the backends' listeners start, the first time."""
        if self._listening is None and not claims.closing:
            self._listening = loop.create_task(self._start(claims))

    async def _start(self, claims: WaitingClaims) -> None:
        """Listen on every backend, then look at once at what the claims wait on
        (what was made claimable before the listeners heard it)."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._listen, list(self.storages()), claims)
        keys = list(claims.queues)
        if keys and not claims.closing:
            await self.look(claims, keys)

    async def run(self, claims: WaitingClaims) -> None:
        """Until the worker stops: a look every interval (listeners: ``waiting``)."""
        loop = asyncio.get_running_loop()
        try:
            while not claims.closing:
                await asyncio.sleep(self.interval)
                claims.forget_recent(loop.time())
                keys = list(claims.queues)
                if keys:
                    await self.look(claims, keys)
        finally:
            if self._listening is not None:
                self._listening.cancel()
            for timer in self.timers.values():
                timer.cancel()
            self._executor.submit(self._close_listeners)
            self._executor.shutdown(wait=False)

    async def look(self, claims: WaitingClaims, keys: list[QueueKey]) -> None:
        """One query per backend for ``keys``; wake or set timers from the answers."""
        loop = asyncio.get_running_loop()
        try:
            moments, now = await loop.run_in_executor(self._executor, self._query, keys, claims)
        except Exception as error:  # a backend down: the waiters wait on, the next look retries
            log.warning("Looking at the queues claims wait on failed: %s", error)
            return
        for key, moment in moments.items():
            delay = moment - now
            if delay <= 0:
                claims.wake(key)
            elif delay < self.interval:
                previous = self.timers.pop(key, None)
                if previous is not None:
                    previous.cancel()
                self.timers[key] = loop.call_later(delay, self._timer_ends, claims, key)

    def _timer_ends(self, claims: WaitingClaims, key: QueueKey) -> None:
        self.timers.pop(key, None)
        claims.wake(key)

    def _query(self, keys: list[QueueKey],
               claims: WaitingClaims) -> tuple[dict[QueueKey, float], float]:
        """On the re-check's thread: the moments of ``keys``, and now."""
        by_storage: dict[int, tuple[Storage, list[QueueKey]]] = {}
        for key in keys:
            try:
                storage = self.storage_for(*key)
            except Exception:  # e.g. the queue's pool was removed: nothing to wait for there
                continue
            by_storage.setdefault(id(storage), (storage, []))[1].append(key)
        self._listen([storage for storage, _ in by_storage.values()], claims)
        self.looks += 1
        moments: dict[QueueKey, float] = {}
        for storage, waited in by_storage.values():
            moments.update(storage.wakeups.earliest_claimable(waited))
        return moments, self.clock.now()

    def _listen(self, storages: list[Storage], claims: WaitingClaims) -> None:
        """Start the listener of each backend not seen yet."""
        for storage in storages:
            if id(storage) in self.listeners:
                continue
            try:
                self.listeners[id(storage)] = storage.wakeups.listen(
                    claims.wake_threadsafe, claims.wake_all_threadsafe)
            except Exception as error:  # the re-check stands in for it
                log.warning("Cannot listen for wake-ups on a backend: %s", error)
                self.listeners[id(storage)] = None

    def _close_listeners(self) -> None:
        for listener in self.listeners.values():
            if listener is not None:
                listener.close()
        self.listeners.clear()
