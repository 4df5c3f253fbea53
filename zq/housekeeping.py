"""Periodic garbage collection inside each server worker.

Expired messages and claims are invisible at once (every query compares
with the clock); collection only reclaims their space and records their
``expired`` events. ``Storage.gc`` is safe to run from several processes at
once, so every worker simply runs its own collector; jitter keeps the
workers from collecting in lockstep.
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Protocol

from zq.storage.base import Storage

log = logging.getLogger(__name__)

JITTER = 0.2  # each wait is the interval +/- 20%


class StopEvent(Protocol):
    """What the collector needs of a threading.Event (tests pass a fake)."""

    def wait(self, timeout: float | None = None) -> bool: ...

    def set(self) -> None: ...


class GarbageCollector:
    """Calls ``storage.gc()`` every ``interval`` seconds until stopped."""

    def __init__(
        self,
        storage: Storage,
        interval: float,
        *,
        stop: StopEvent | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive; 0 disables collection")
        self.storage = storage
        self.interval = interval
        self._stop: StopEvent = stop if stop is not None else threading.Event()
        self._rng = rng or random.Random()
        self._thread: threading.Thread | None = None

    def next_delay(self) -> float:
        """Seconds to wait before the next collection (the interval, jittered)."""
        return self.interval * self._rng.uniform(1 - JITTER, 1 + JITTER)

    def collect_once(self) -> int | None:
        """One collection; returns messages removed, or None when it failed."""
        try:
            removed = self.storage.gc()
        except Exception as exc:  # never fatal: the next round tries again
            log.warning("garbage collection failed: %s: %s", type(exc).__name__, exc)
            return None
        if removed:
            log.info("garbage collection removed %d expired message(s)", removed)
        return removed

    def run(self) -> None:
        """Collect after each wait until ``stop()`` is called."""
        while not self._stop.wait(self.next_delay()):
            self.collect_once()

    def start(self) -> None:
        """Run in a daemon thread (it never keeps a process alive)."""
        self._thread = threading.Thread(target=self.run, name="zq-gc", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Ask the loop to end and wait (bounded) for a collection in progress."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
