"""Periodic garbage collection inside each server worker.

Expired messages and claims are invisible at once (every query compares
with the clock); collection only reclaims their space and records their
``expired`` events. ``Storage.gc`` is safe to run from several processes at
once, so every worker simply runs its own collector; jitter keeps the
workers from collecting in lockstep. With pooling a worker has one backend
per pool, and pools come and go while it runs: each round asks for the
current backends and collects each one, whatever happens to the others.

After collecting a backend (and once when it starts, before the first
wait) the collector runs ``after_collect`` on it: the server passes
zq.service.auto_redrive's ``run_due``, which finishes the automatic
redrives a breaker's close left due (a crash between the close and its
redrive loses nothing; running it in several workers at once moves each
message once).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Protocol

from zq.pooling.base import PoolDown, StorageSource
from zq.storage.base import Storage

log = logging.getLogger(__name__)

JITTER = 0.2  # each wait is the interval +/- 20%


class StopEvent(Protocol):
    """What the collector needs of a threading.Event (tests pass a fake)."""

    def wait(self, timeout: float | None = None) -> bool: ...

    def set(self) -> None: ...


class GarbageCollector:
    """Calls ``gc()`` on every backend every ``interval`` seconds until stopped.

    ``storages`` is one Storage, or a callable returning the current
    backends by pool name, asked for again on every round (e.g.
    ``pools.storages`` of a zq.pooling resolver).
    """

    def __init__(
        self,
        storages: Storage | StorageSource,
        interval: float,
        *,
        stop: StopEvent | None = None,
        rng: random.Random | None = None,
        after_collect: Callable[[Storage], int] | None = None,
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive; 0 disables collection")
        if callable(storages):
            self._storages: StorageSource = storages
        else:
            single: Storage = storages
            self._storages = lambda: {"": single}  # one backend, no pool name to show
        self.interval = interval
        self._stop: StopEvent = stop if stop is not None else threading.Event()
        self._rng = rng or random.Random()
        self._after_collect = after_collect
        self._thread: threading.Thread | None = None

    def next_delay(self) -> float:
        """Seconds to wait before the next collection (the interval, jittered)."""
        return self.interval * self._rng.uniform(1 - JITTER, 1 + JITTER)

    def collect_once(self) -> int | None:
        """One round over every backend; messages removed, None when none could be collected.

        A backend that fails (an unreachable pool) is logged and skipped;
        the others are still collected, and the next round tries it again.
        """
        try:
            storages = dict(self._storages())
        except Exception as exc:  # e.g. the management store is down
            log.warning("garbage collection failed: cannot list the pools: %s: %s",
                        type(exc).__name__, exc)
            return None
        removed, failed = 0, 0
        for pool, storage in storages.items():
            where = f" (pool {pool!r})" if pool else ""
            if isinstance(storage, PoolDown):
                log.warning("garbage collection failed: the pool is unreachable: %s%s",
                            storage.reason, where)
                failed += 1
                continue
            try:
                collected = storage.gc()
            except Exception as exc:  # never fatal: the next round tries again
                log.warning("garbage collection failed: %s: %s%s", type(exc).__name__, exc, where)
                failed += 1
                continue
            if (collected.messages or collected.claims or collected.moved
                    or collected.subscriptions):
                log.info("garbage collection removed %d expired message(s), %d expired "
                         "claim(s) and %d expired subscription(s), moved %d expired "
                         "message(s) to dead letter queues%s", collected.messages,
                         collected.claims, collected.subscriptions, collected.moved, where)
            removed += collected.messages
            self._after(storage, where)
        if storages and failed == len(storages):
            return None
        return removed

    def _after(self, storage: Storage, where: str) -> None:
        """``after_collect`` on one backend; a failure is logged, the next round retries."""
        if self._after_collect is None:
            return
        try:
            moved = self._after_collect(storage)
        except Exception as exc:  # never fatal, as a failed collection
            log.warning("automatic redrive after an outage failed: %s: %s%s",
                        type(exc).__name__, exc, where)
            return
        if moved:
            log.info("automatic redrive moved %d message(s) back after an outage%s",
                     moved, where)

    def after_collect_once(self) -> None:
        """``after_collect`` on every backend reachable now (at start, before any wait)."""
        if self._after_collect is None:
            return
        try:
            storages = dict(self._storages())
        except Exception as exc:
            log.warning("automatic redrive after an outage failed: cannot list the pools: "
                        "%s: %s", type(exc).__name__, exc)
            return
        for pool, storage in storages.items():
            if not isinstance(storage, PoolDown):
                self._after(storage, f" (pool {pool!r})" if pool else "")

    def run(self) -> None:
        """Collect after each wait until ``stop()`` is called (``after_collect`` first)."""
        self.after_collect_once()
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
