"""Per-queue gauges, computed at scrape time within a budget and cached.

The queues reported are those the event tail has seen (zq.metrics.tail),
the most recently active first, at most ``[metrics] max_queues`` of them;
each costs a few reads of its backend (stats, the oldest message, the
metadata, the dead letter queue's stats, the breaker when it is on). A
worker reuses what it computed for ``cache_seconds``; the computation
stops when ``budget_seconds`` are spent, and
``zq_metrics_queues{state="omitted"}`` says how many queues were left out
either way.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric

from zq.clock import Clock
from zq.config import MetricsConfig
from zq.errors import MessageNotFound, QueueNotFound
from zq.metrics.tail import CONSUMER_WINDOW, QUEUE_KEY_SEP, TailState
from zq.poison import breaker
from zq.poison.dead_letter import DEAD_LETTER_QUEUE
from zq.pooling.base import PoolDown, StorageSource
from zq.storage.base import Storage

log = logging.getLogger(__name__)

# Every state of a breaker, each a series of zq_queue_breaker_state.
BREAKER_STATES = breaker.STATES

@dataclass
class QueueReading:
    free: int = 0
    claimed: int = 0
    delayed: int = 0  # of free: not claimable yet (a post's delay, or backoff)
    oldest_age: float | None = None
    oldest_ttl: int | None = None
    dead_letter: int | None = None  # messages in its dead letter queue, when it has one
    consumers: int = 0
    # Queues in each breaker state (1 for one queue), when its breaker is on.
    breaker: dict[str, int] | None = None

    def merge(self, other: QueueReading) -> None:
        """Add a same-named queue of another project (when not labelled per project)."""
        self.free += other.free
        self.claimed += other.claimed
        self.delayed += other.delayed
        self.consumers += other.consumers
        if other.dead_letter is not None:
            self.dead_letter = (self.dead_letter or 0) + other.dead_letter
        if other.breaker is not None:
            merged = self.breaker or dict.fromkeys(BREAKER_STATES, 0)
            self.breaker = {s: merged[s] + other.breaker[s] for s in BREAKER_STATES}
        if other.oldest_age is not None and (
            self.oldest_age is None or _ttl_share(other) > _ttl_share(self)
        ):
            self.oldest_age, self.oldest_ttl = other.oldest_age, other.oldest_ttl


def _ttl_share(reading: QueueReading) -> float:
    """How much of its ttl the oldest message has lived (the alert's question)."""
    return (reading.oldest_age or 0.0) / max(reading.oldest_ttl or 1, 1)


def read_queue(storage: Storage, project: str, queue: str, now: float) -> QueueReading | None:
    """One queue's gauges from its backend; None when the queue no longer exists."""
    try:
        metadata = storage.queues.get_metadata(project, queue)
    except QueueNotFound:  # deleted (while empty: no event said so)
        return None
    target = metadata.get(DEAD_LETTER_QUEUE)
    stats = storage.queues.stats(project, queue)
    reading = QueueReading(free=stats.free, claimed=stats.claimed, delayed=stats.delayed)
    if stats.oldest is not None:
        reading.oldest_age = max(0.0, now - stats.oldest.created)
        with contextlib.suppress(MessageNotFound):  # deleted meanwhile: no ttl to show
            reading.oldest_ttl = storage.messages.get(project, queue, stats.oldest.id).ttl
    if target:
        reading.dead_letter = storage.queues.stats(project, target).total
    policy = breaker.policy_from_metadata(metadata)
    if policy is not None and storage.has_breaker:
        state = storage.breakers.read(project, queue, policy, now).state
        reading.breaker = {s: int(s == state) for s in BREAKER_STATES}
    return reading


class QueueGauges:
    """A prometheus_client collector of the per-queue gauges."""

    def __init__(self, config: MetricsConfig, state: Callable[[], TailState],
                 storages: StorageSource, clock: Clock) -> None:
        self.config = config
        self.state = state
        self.storages = storages
        self.clock = clock
        self._lock = threading.Lock()
        self._cached: list[Metric] = []
        self._cached_at = float("-inf")

    def describe(self) -> Iterable[Metric]:
        return []  # computed at scrape time only

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            if time.monotonic() - self._cached_at >= self.config.cache_seconds:
                self._cached = self._compute()
                self._cached_at = time.monotonic()
            return list(self._cached)

    def _compute(self) -> list[Metric]:
        started = time.perf_counter()
        deadline = started + self.config.budget_seconds
        now = self.clock.now()
        state = self.state()
        queues = sorted(state.queues.items(), key=lambda item: -item[1]["active"])
        storages = dict(self.storages())
        readings: dict[tuple[str, ...], QueueReading] = {}
        reported = gone = 0
        for key, info in queues[: self.config.max_queues]:
            if time.perf_counter() >= deadline:
                break
            pool, project, queue = key.split(QUEUE_KEY_SEP)
            storage = storages.get(pool)
            if storage is None or isinstance(storage, PoolDown):  # removed since, or down
                continue
            try:
                reading = read_queue(storage, project, queue, now)
            except Exception as exc:  # an unreachable backend: its queues go unreported
                log.warning("metrics: cannot read queue %r: %s: %s", queue,
                            type(exc).__name__, exc)
                continue
            if reading is None:
                gone += 1
                continue
            reading.consumers = sum(
                1 for seen in info["consumers"].values() if seen >= now - CONSUMER_WINDOW
            )
            labels = (project, queue) if self.config.per_project else (queue,)
            if labels in readings:
                readings[labels].merge(reading)
            else:
                readings[labels] = reading
            reported += 1
        return self._families(readings, reported, len(queues) - reported - gone,
                              time.perf_counter() - started)

    def _families(self, readings: dict[tuple[str, ...], QueueReading], reported: int,
                  omitted: int, seconds: float) -> list[Metric]:
        names = ["project", "queue"] if self.config.per_project else ["queue"]
        messages = GaugeMetricFamily("zq_queue_messages", "Alive messages in the queue by state "
                                     "(free includes delayed).", labels=[*names, "state"])
        delayed = GaugeMetricFamily(
            "zq_queue_delayed_messages", "Free messages of the queue not claimable yet "
            "(a post's delay, or backoff after a claim that ended without a delete).",
            labels=names)
        age = GaugeMetricFamily("zq_queue_oldest_message_age_seconds",
                                "Age of the queue's oldest alive message.", labels=names)
        ttl = GaugeMetricFamily("zq_queue_oldest_message_ttl_seconds",
                                "The ttl of the queue's oldest alive message.", labels=names)
        dead = GaugeMetricFamily("zq_queue_dead_letter_messages",
                                 "Messages in the queue's dead letter queue.", labels=names)
        consumers = GaugeMetricFamily(
            "zq_queue_consumers", "Client-IDs that claimed from the queue in the last 15 minutes.",
            labels=names)
        breakers = GaugeMetricFamily(
            "zq_queue_breaker_state", "1 for the state the queue's breaker is in, 0 for the "
            "others (queues whose breaker is on; same-named queues of several projects add up).",
            labels=[*names, "state"])
        for labels, reading in sorted(readings.items()):
            messages.add_metric([*labels, "free"], reading.free)
            messages.add_metric([*labels, "claimed"], reading.claimed)
            delayed.add_metric(list(labels), reading.delayed)
            consumers.add_metric(list(labels), reading.consumers)
            if reading.oldest_age is not None:
                age.add_metric(list(labels), reading.oldest_age)
                if reading.oldest_ttl is not None:
                    ttl.add_metric(list(labels), reading.oldest_ttl)
            if reading.dead_letter is not None:
                dead.add_metric(list(labels), reading.dead_letter)
            for state, count in (reading.breaker or {}).items():
                breakers.add_metric([*labels, state], count)
        counted = GaugeMetricFamily("zq_metrics_queues",
                                    "Queues with per-queue gauges in this scrape, and left out.",
                                    labels=["state"])
        counted.add_metric(["reported"], reported)
        counted.add_metric(["omitted"], omitted)
        cost = GaugeMetricFamily("zq_metrics_queue_gauges_seconds",
                                 "Time the last computation of the per-queue gauges took.")
        cost.add_metric([], seconds)
        return [messages, delayed, age, ttl, dead, consumers, breakers, counted, cost]
