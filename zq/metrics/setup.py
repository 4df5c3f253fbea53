"""Building one process's metrics: counters, event tail, per-queue gauges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zq.clock import Clock
from zq.config import MetricsConfig
from zq.metrics.gauges import QueueGauges
from zq.metrics.registry import Metrics
from zq.metrics.tail import (
    EventTail,
    FileTailStore,
    MemoryTailStore,
    StorageSource,
    queue_rates,
)

RATES_TAIL_EVERY = 2.0  # seconds between the tails the rates endpoint triggers


@dataclass
class Telemetry:
    """What ``GET /metrics`` and the request middleware use."""

    metrics: Metrics
    tail: EventTail
    _rates_tailed: float = float("-inf")  # when the rates endpoint last tailed (clock time)

    def scrape(self) -> bytes:
        """Count the events recorded since the last scrape, then render every series."""
        self.tail.run_once()
        return self.metrics.render()

    def rates(self, project: str, queue: str) -> dict[str, Any]:
        """A queue's recent message rates (zq.metrics.tail.queue_rates), the
        events counted first, at most once per RATES_TAIL_EVERY seconds in this
        process: a console asking for every queue every few seconds must not
        tail (and save the tail's state) once per queue."""
        now = self.tail.clock.now()
        if now - self._rates_tailed >= RATES_TAIL_EVERY:
            self._rates_tailed = now
            self.tail.run_once()
        pools = dict(self.tail.storages()).keys()
        return queue_rates(self.tail.store.snapshot(), pools, project, queue, now)


def open_telemetry(config: MetricsConfig, storages: StorageSource, clock: Clock,
                   *, multiprocess_dir: str | None = None) -> Telemetry:
    """This process's telemetry; ``multiprocess_dir`` shared with the other workers.

    Without a directory (one process, e.g. tests) the tail's state lives in
    memory and counting starts now; ``zq serve`` creates the directory
    (zq.metrics.multiprocess) and the moment counting starts.
    """
    metrics = Metrics(config, multiprocess_dir=multiprocess_dir)
    store = (FileTailStore(multiprocess_dir) if multiprocess_dir
             else MemoryTailStore(clock.now()))
    metrics.add_collector(QueueGauges(config, store.snapshot, storages, clock))
    return Telemetry(metrics, EventTail(metrics, storages, clock, store,
                                        budget=config.budget_seconds))
