"""The series zq exports, and one scrape's text.

Counters and histograms are prometheus_client objects in a private
registry. Under ``zq serve`` every worker writes them to files of one
directory (prometheus_client's multiprocess mode) and a scrape of any
worker reads them all through MultiProcessCollector, so it sees every
worker's counts, those of workers that have since ended included.
"""

from __future__ import annotations

import glob
import os
import re

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

from zq.config import MetricsConfig
from zq.poison.moves import (
    REASON_EXPIRED,
    REASON_LAPSED,
    REASON_MAX_CLAIM_COUNT,
    REASON_REJECTED,
    REASON_UNREADABLE,
)

# Seconds; requests are mostly milliseconds, a long poll or a slow backend seconds.
HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Seconds from post to delete: from an instant consumer to a message parked for a day.
POST_TO_DELETE_BUCKETS = (0.01, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0,
                          4 * 3600.0, 86400.0)

# A worker's file of "live" gauges (prometheus_client names it by mode and pid).
LIVE_GAUGE_FILE = re.compile(r"gauge_live\w+_(\d+)\.db$")

# The reasons of a move into a dead letter queue (a redrive out of one is
# zq_messages_redriven); their series exist at 0 from the start, so that
# increase() sees the first move.
DEAD_LETTER_REASONS = (REASON_MAX_CLAIM_COUNT, REASON_REJECTED, REASON_EXPIRED,
                       REASON_UNREADABLE, REASON_LAPSED)


class Metrics:
    """Every counter and histogram of one process, and how to render a scrape."""

    def __init__(self, config: MetricsConfig, *, multiprocess_dir: str | None = None) -> None:
        if multiprocess_dir:
            # prometheus_client finds the directory in the environment only,
            # and picks its value class when first imported: set both here,
            # in the worker, whatever was imported before.
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = multiprocess_dir
            values.ValueClass = values.MultiProcessValue()
        self.config = config
        self.multiprocess_dir = multiprocess_dir
        self.registry = CollectorRegistry(auto_describe=True)
        self.labels: tuple[str, ...] = ("project",) if config.per_project else ()

        def counter(name: str, doc: str, extra: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, self.labels + extra, registry=self.registry)

        self.posted = counter("zq_messages_posted", "Messages posted.")
        self.claimed = counter("zq_messages_claimed", "Messages handed out by a claim or pop.")
        self.deleted = counter("zq_messages_deleted", "Messages deleted (pops included).")
        self.released = counter("zq_messages_released", "Messages freed by a claim release.")
        self.dead_lettered = counter(
            "zq_messages_dead_lettered", "Messages moved to a dead letter queue.", ("reason",)
        )
        self.expired = counter("zq_messages_expired", "Expired messages removed by gc.")
        self.claims_lapsed = counter(
            "zq_claims_lapsed", "Claims that expired still holding messages (seen by gc)."
        )
        # The notification counters are counted by the notifier process
        # (zq.notifications.process).
        self.redriven = counter("zq_messages_redriven", "Dead letters moved back by a redrive.")
        self.rejected = counter(
            "zq_messages_rejected", "Messages rejected by their claim's holder (retry or terminal)."
        )
        # Per queue: breakers are opt-in and trips rare, so the series stay few.
        self.breaker_trips = counter(
            "zq_breaker_trips", "Times a queue's breaker tripped open: its failures crossed "
            "_breaker_failure_ratio (forced opens and re-opens after a failed probe not "
            "counted).", ("queue",))
        self.notifications_sent = counter(
            "zq_notifications_sent", "Notification attempts delivered (2xx, 3xx, mail accepted)."
        )
        self.notifications_failed = counter(
            "zq_notifications_failed",
            "Notification attempts that failed (refused host, 4xx, 5xx, no answer).",
        )
        self.http_latency = Histogram(
            "zq_http_request_duration_seconds", "HTTP request latency.",
            ("method", "route", "status"), buckets=HTTP_BUCKETS, registry=self.registry,
        )
        self.post_to_delete = Histogram(
            "zq_message_post_to_delete_seconds",
            "Time from a message's post to its delete (messages posted since the start).",
            self.labels, buckets=POST_TO_DELETE_BUCKETS, registry=self.registry,
        )
        # Long-poll claims (zq.waiting). The gauge is one per worker, summed
        # over the workers alive at scrape time ("livesum"): the files of a
        # worker that has ended are removed before each scrape (render).
        self.claims_waiting = Gauge(
            "zq_claims_waiting", "Claims waiting for a message (?wait=S) in this server's workers.",
            self.labels, multiprocess_mode="livesum", registry=self.registry,
        )
        self.claim_wakeups = counter(
            "zq_claim_wakeups",
            "Waiting claims woken to try again (a post, a release, a delay or backoff that "
            "ended, a re-check).",
        )
        if not self.labels:
            for reason in DEAD_LETTER_REASONS:
                self.dead_lettered.labels(reason)  # present at 0 before the first move
        self._exposition = self.registry
        if multiprocess_dir:
            self._exposition = CollectorRegistry()
            MultiProcessCollector(self._exposition, path=multiprocess_dir)

    def by(self, metric: Counter | Histogram, project: str, *extra: str) -> Counter | Histogram:
        """The child of ``metric`` for ``project`` (when per project) and ``extra`` labels."""
        labels = ((project,) if self.labels else ()) + extra
        return metric.labels(*labels) if labels else metric

    def add_collector(self, collector: Collector) -> None:
        """A collector computed at scrape time (the per-queue gauges)."""
        self._exposition.register(collector)

    def render(self) -> bytes:
        """The Prometheus text exposition (format 0.0.4) of every series."""
        if self.multiprocess_dir:
            forget_ended_workers(self.multiprocess_dir)
        return generate_latest(self._exposition)


def forget_ended_workers(directory: str) -> list[int]:
    """Remove the live gauges of workers that have ended (a crash, a restart);
    their pids. Counters and histograms stay: an ended worker's counts still count."""
    ended = []
    for path in glob.glob(os.path.join(directory, "gauge_live*_*.db")):
        match = LIVE_GAUGE_FILE.search(os.path.basename(path))
        if match and not alive(int(match.group(1))):
            ended.append(int(match.group(1)))
    for pid in sorted(set(ended)):
        mark_process_dead(pid, directory)
    return sorted(set(ended))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
