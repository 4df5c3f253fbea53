"""Building one process's metrics: counters, event tail, per-queue gauges."""

from __future__ import annotations

from dataclasses import dataclass

from zq.clock import Clock
from zq.config import MetricsConfig
from zq.metrics.gauges import QueueGauges
from zq.metrics.registry import Metrics
from zq.metrics.tail import EventTail, FileTailStore, MemoryTailStore, StorageSource


@dataclass
class Telemetry:
    """What ``GET /metrics`` and the request middleware use."""

    metrics: Metrics
    tail: EventTail

    def scrape(self) -> bytes:
        """Count the events recorded since the last scrape, then render every series."""
        self.tail.run_once()
        return self.metrics.render()


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
