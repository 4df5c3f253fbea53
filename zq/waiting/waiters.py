"""One worker's waiting claims, per queue in arrival order, on its event loop.

Every method but ``wake_threadsafe`` runs on the loop, so the registry needs
no lock. A waiter is *idle* while parked and *trying* from the wake-up that
picked it until its claim attempt is over (``tried``). A wake-up of a queue
picks the first waiter in line, and a queue has one attempt in flight at a
time: one message never makes every waiter run a claim, and a later waiter
never takes what an earlier one's attempt just missed (strict arrival order
within a worker; across workers and servers, whichever claims first). What
the attempt found decides what follows:

- messages, as many as asked for: the queue may hold more, the next in
  line tries at once;
- messages, fewer than asked for: the queue was emptied; the others wait on;
- nothing: the waiter is idle again, first in line.

A wake-up that comes while the first in line is trying is kept
(``pending``): it tries once more when its attempt is over (the message may
have arrived just after its claim looked). A waiter that leaves while
picked (its time ran out, its client left) hands its wake-up on. A wake-up of a queue
nobody waits on yet is remembered for a moment (``recent``): a claim that
found nothing just before a post, and enters right after the post's
wake-up, tries again at once instead of waiting for the re-check.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
from typing import Any

from zq.metrics.waiting import WaitingCensus
from zq.storage.wakeups import QueueKey
from zq.waiting.recheck import Recheck

WAKE, TIMEOUT, GONE, CLOSING = "wake", "timeout", "gone", "closing"

# Seconds a wake-up of a queue nobody waited on is remembered (``recent``):
# longer than any claim attempt takes.
RECENT_SECONDS = 60.0


class Waiter:
    """One waiting request: its queue, its deadline (loop time), its state."""

    __slots__ = ("client_id", "deadline", "key", "left", "trying", "woken")

    def __init__(self, key: QueueKey, deadline: float, client_id: str = "") -> None:
        self.key = key
        self.deadline = deadline
        self.client_id = client_id  # for the consumers' waiting counts
        self.trying = False  # picked by a wake-up: its next step is a claim attempt
        self.left = False
        self.woken: asyncio.Future[str] | None = None  # while parked


class WaitingClaims:
    """The registry (module documentation); ``capacity`` waiters at most."""

    def __init__(self, *, capacity: int, recheck: Recheck | None = None,
                 census: WaitingCensus | None = None) -> None:
        self.capacity = capacity
        self.recheck = recheck
        # Told of each waiter that enters and leaves, and of each wake-up that
        # picks one: the stats' and consumers' counts, the metrics.
        self.census = census
        self.loop: asyncio.AbstractEventLoop | None = None
        self.queues: dict[QueueKey, list[Waiter]] = {}
        self.pending: set[QueueKey] = set()
        self.recent: dict[QueueKey, float] = {}
        self.count = 0
        # Requests that asked to wait and are not answered yet, waiting or
        # not (zq.buffered_wsgi counts them): while none is, no wake-up matters.
        self.asking = 0
        self.wakeups = 0  # wake-ups that picked a waiter (a counter, for metrics)
        self.closing = False
        self._incoming: collections.deque[QueueKey] = collections.deque()
        self._drain_pending = False
        self._recheck_task: asyncio.Task[None] | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Serve on ``loop`` (the worker's); starts the re-check."""
        if self.loop is loop:
            return
        self.loop = loop
        if self.recheck is not None:
            self._recheck_task = loop.create_task(self.recheck.run(self))

    # -- from any thread ---------------------------------------------------

    def wake_threadsafe(self, project: str, queue: str) -> None:
        """``queue`` may have a message to claim (a post, a release, a listener's report)."""
        loop = self.loop
        if loop is None or not self.asking:
            # Nobody waits, nor can a claim that found nothing be about to:
            # a post costs this process no wake-up of its loop.
            return
        # As zq.buffered_wsgi.Answers: one wake-up of the loop for all the
        # reports that arrive before it runs, not one system call each.
        self._incoming.append((project, queue))
        if not self._drain_pending:
            self._drain_pending = True
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        self._drain_pending = False
        incoming = self._incoming
        while incoming:
            self.wake(incoming.popleft())

    def wake_all_threadsafe(self) -> None:
        """Every waited queue may have a message (a listener reconnected: what was
        reported meanwhile is lost)."""
        loop = self.loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.wake_all)

    def wake_all(self) -> None:
        for key in list(self.queues):
            self.wake(key)

    # -- on the loop ---------------------------------------------------------

    def wake(self, key: QueueKey) -> None:
        """Let the first waiter on ``key`` try to claim (again, once its attempt is over)."""
        waiters = self.queues.get(key)
        if not waiters:
            if self.loop is not None:
                self.recent[key] = self.loop.time()
            return
        head = waiters[0]
        if head.trying:
            # One attempt at a time per queue, by the first in line: a later
            # waiter never takes the message its elders' attempt just missed.
            self.pending.add(key)
            return
        head.trying = True
        self.wakeups += 1
        if self.census is not None:
            self.census.woken(key[0])
        if head.woken is not None and not head.woken.done():
            head.woken.set_result(WAKE)

    def enter(self, key: QueueKey, seconds: float, *, since: float,
              client_id: str = "") -> Waiter | None:
        """A request whose claim attempt, started at loop time ``since``, found
        nothing; None when it cannot wait (full, closing): answer it now."""
        loop = self.loop
        if loop is None or self.closing or self.count >= self.capacity:
            return None
        waiter = Waiter(key, loop.time() + seconds, client_id)
        self.queues.setdefault(key, []).append(waiter)
        self.count += 1
        if self.recheck is not None:
            self.recheck.waiting(self, loop)  # the listeners start with the first waiter
        if self.census is not None:
            self.census.started(key[0], key[1], client_id)
        if self.recent.get(key, -math.inf) >= since:
            self.wake(key)  # woken during its attempt: the first idle waiter tries
        return waiter

    async def park(self, waiter: Waiter, gone: asyncio.Future[Any]) -> str:
        """Wait until ``waiter`` is picked (WAKE), its time is up (TIMEOUT), its
        client left (GONE) or the worker stops (CLOSING)."""
        loop = self.loop
        assert loop is not None
        if self.closing:
            return CLOSING
        if gone.done():
            return GONE
        if waiter.trying:
            return WAKE
        if loop.time() >= waiter.deadline:
            return TIMEOUT
        woken = waiter.woken = loop.create_future()
        timer = loop.call_at(waiter.deadline, _settle, woken, TIMEOUT)

        def on_gone(_: Any) -> None:
            _settle(woken, GONE)

        gone.add_done_callback(on_gone)
        try:
            return await woken
        finally:
            timer.cancel()
            gone.remove_done_callback(on_gone)
            waiter.woken = None

    def tried(self, waiter: Waiter, *, claimed: int, more: bool) -> None:
        """``waiter``'s claim attempt is over: it delivered ``claimed`` messages,
        ``more`` when as many as it asked for."""
        key = waiter.key
        if claimed:
            self._remove(waiter)
        else:
            waiter.trying = False
        if (claimed and more) or key in self.pending:
            self.pending.discard(key)
            self.wake(key)

    def leave(self, waiter: Waiter) -> None:
        """The request is answered or gone; a wake-up it was given goes to the next."""
        if waiter.left:
            return
        self._remove(waiter)
        if waiter.trying:
            self.wake(waiter.key)

    def close(self) -> None:
        """The worker stops: every parked request is answered now (CLOSING)."""
        self.closing = True
        for waiters in self.queues.values():
            for waiter in waiters:
                if waiter.woken is not None:
                    _settle(waiter.woken, CLOSING)
        if self._recheck_task is not None:
            self._recheck_task.cancel()

    def forget_recent(self, now: float) -> None:
        """Drop the wake-ups of queues nobody waited on that are too old to matter."""
        old = [key for key, when in self.recent.items() if now - when > RECENT_SECONDS]
        for key in old:
            del self.recent[key]

    def waiting(self) -> dict[QueueKey, int]:
        """Waiting requests per queue (the console's and the metrics' gauge)."""
        return {key: len(waiters) for key, waiters in self.queues.items()}

    def _remove(self, waiter: Waiter) -> None:
        waiter.left = True
        waiters = self.queues.get(waiter.key)
        if waiters is None:
            return
        with contextlib.suppress(ValueError):
            waiters.remove(waiter)
            self.count -= 1
            if self.census is not None:
                self.census.ended(waiter.key[0], waiter.key[1], waiter.client_id)
        if not waiters:
            del self.queues[waiter.key]
            self.pending.discard(waiter.key)


def _settle(future: asyncio.Future[str], outcome: str) -> None:
    if not future.done():
        future.set_result(outcome)
