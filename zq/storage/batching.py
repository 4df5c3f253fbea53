"""Leader/follower batching: the calls of concurrent threads share one execution.

For work where one round trip or one commit can serve many callers at once:
coalesced Redis script calls (zq.storage.redis.coalesce: one pipeline) and
SQL group commit (zq.storage.sql.group_commit: one transaction). Each of
those says how a batch runs and how each of its units is answered
(``Batcher._run_batch``); this module decides who runs which batch, and when.

A caller queues its unit. If no batch is running, it leads at once: it
takes the line (itself alone, so a quiet server waits for nothing) and
runs it. Units that arrive while a batch runs wait in line; when that
batch is done, its leader hands the lead to the first of them, which takes
the line (up to ``max_batch``) as the next batch, and only then releases
the callers it answered. There is no background thread: the leader is
always one of the callers, and every caller returns with its own unit's
outcome (its result, or its error raised in its own thread).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar


class Unit:
    """One caller's work, waiting in line, then its outcome."""

    __slots__ = ("error", "gate", "lead", "result")

    def __init__(self) -> None:
        # Held while the unit waits as a follower, until it is answered or
        # made leader: a lock is the cheapest thing a thread can block on
        # and another release. None for a unit that led at once.
        self.gate: threading.Lock | None = None
        self.lead = False  # released to lead the next batch, not with an outcome
        self.result: Any = None
        self.error: BaseException | None = None


U = TypeVar("U", bound=Unit)


class Batcher(Generic[U]):
    """Runs the units of many threads in batches, each led by one of its callers."""

    def __init__(self, *, max_batch: int, window: float = 0.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        """``max_batch``: units in one batch at most.

        ``window``: seconds a new leader waits for more units before it takes
        the line (0: only those that queued while the previous batch ran).
        ``sleep``: how it waits (tests pass their own).
        """
        self._max_batch = max_batch
        self._window = window
        self._sleep = sleep
        self._lock = threading.Lock()
        self._waiting: list[U] = []
        self._leading = False  # a batch is running or about to: new units wait

    def _submit(self, unit: U) -> Any:
        """``unit``'s result once its batch has run; raises its error instead."""
        with self._lock:
            self._waiting.append(unit)
            lead = not self._leading
            if not lead:
                unit.gate = gate = threading.Lock()
                gate.acquire()
            self._leading = True
        if not lead:
            gate.acquire()  # released by a leader: an outcome, or the lead
            lead = unit.lead
        if lead:
            self._lead()  # its batch starts with ``unit``, answered when this returns
        if unit.error is not None:
            raise unit.error
        return unit.result

    def _run_batch(self, batch: list[U]) -> None:
        """Run ``batch`` and set each unit's ``result`` or ``error``."""
        raise NotImplementedError

    def _lead(self) -> None:
        """Run one batch, hand the lead to whoever waits, release the batch's callers."""
        if self._window > 0:
            self._sleep(self._window)
        with self._lock:
            batch = self._waiting[:self._max_batch]
            del self._waiting[:self._max_batch]
        try:
            self._run_batch(batch)
        except BaseException as error:
            # A batch that fails as a whole (a bug, a test hook: each driver
            # answers a backend's errors unit by unit) fails each of its
            # callers, so that none takes an empty outcome for success.
            for unit in batch:
                unit.error = error
        finally:
            with self._lock:
                if self._waiting:
                    successor = self._waiting[0]
                    successor.lead = True
                    successor.gate.release()  # type: ignore[union-attr]
                else:
                    self._leading = False
            # The leader's own unit is the first of its batch: it holds no gate
            # (the first leader) or its gate was released to make it leader.
            for unit in batch[1:]:
                unit.gate.release()  # type: ignore[union-attr]
