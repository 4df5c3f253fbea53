"""Counting the backends' event logs into the counters, once per event.

Every driver records an event in the same atomic step as each change
(zq.events), including the changes no request announces: a dead letter
move inside a claim, an expiry or a lapsed claim found by gc. So the
counters are derived from the event logs rather than from what requests
returned: one source, whatever process made the change.

A scrape tails: the worker serving it takes the tail lock (without waiting:
when another worker holds it, this scrape simply shows the counts as they
are), reads each backend's events after its cursor within the time budget,
counts them and saves the cursors. The lock, the cursors and the little
state the per-queue gauges need live in the server's metrics directory, so
each event is counted once across workers.

Events recorded before the server started move no counter (counters start
at 0 with the server, as Prometheus expects; they still tell the gauges
which queues exist), and so are, until the next
scrape, events younger than SETTLE seconds: a margin for backends whose
log a late commit can still extend behind the cursor (PostgreSQL reads its
log in commit order, zq.storage.sql.commit_order; the others need not).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zq import events
from zq.clock import Clock
from zq.metrics.registry import Metrics
from zq.poison import breaker_alerts, moves
from zq.pooling.base import PoolDown, StorageSource
from zq.storage.base import Storage
from zq.storage.records import Event

log = logging.getLogger(__name__)

SETTLE = 2.0  # seconds an event must be old to be counted
PAGE = 1000  # events read per call
CONSUMER_WINDOW = 15 * 60  # seconds a Client-ID counts as a queue's consumer after a claim
MAX_POST_TIMES = 50_000  # messages whose post time is kept for the post-to-delete histogram
MAX_QUEUES = 100_000  # queues the state remembers (least recently active forgotten first)
# A queue's recent activity for GET /v2/queues/{q}/rates (the console's
# message rates): counts per RATE_STEP seconds over the last RATE_WINDOW.
RATE_STEP = 10
RATE_WINDOW = 600
# Event kind -> the rate it counts; dead_lettered counts on the queue the
# message left, redriven on the dead letter queue it left.
RATE_KINDS = {events.POSTED: "posted", events.CLAIMED: "delivered", events.DELETED: "deleted",
              events.DEAD_LETTERED: "dead_lettered", events.REDRIVEN: "redriven"}

@dataclass
class TailState:
    """What the tail keeps between scrapes (JSON in the metrics directory)."""

    started: float
    cursors: dict[str, str] = field(default_factory=dict)
    # "pool\x1fproject\x1fqueue" -> {"active": time, "consumers": {client_id: time}}
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    posted: dict[str, float] = field(default_factory=dict)  # message id -> post time

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TailState:
        return cls(data["started"], dict(data.get("cursors", {})),
                   dict(data.get("queues", {})), dict(data.get("posted", {})))

    def to_json(self) -> dict[str, Any]:
        return {"started": self.started, "cursors": self.cursors, "queues": self.queues,
                "posted": self.posted}


QUEUE_KEY_SEP = "\x1f"


def queue_key(pool: str, project: str, queue: str) -> str:
    return QUEUE_KEY_SEP.join((pool, project, queue))


class MemoryTailStore:
    """The tail's state in this process (one process serves every request)."""

    def __init__(self, started: float) -> None:
        self._state = TailState(started)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def locked(self) -> Iterator[TailState | None]:
        """The state to update, or None when another thread is tailing."""
        if not self._lock.acquire(blocking=False):
            yield None
            return
        try:
            yield self._state
        finally:
            self._lock.release()

    def snapshot(self) -> TailState:
        return self._state


class FileTailStore:
    """The tail's state in the server's metrics directory, shared by its workers."""

    STATE = "zq-tail.json"
    LOCK = "zq-tail.lock"

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    @classmethod
    def create(cls, directory: str | os.PathLike[str], started: float) -> FileTailStore:
        """A fresh state: the server starts counting at ``started``."""
        store = cls(directory)
        store._save(TailState(started))
        return store

    @contextlib.contextmanager
    def locked(self) -> Iterator[TailState | None]:
        """The state to update (saved on exit), or None when another worker is tailing."""
        with open(self.directory / self.LOCK, "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield None
                return
            try:
                state = self.snapshot()
                yield state
                self._save(state)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def snapshot(self) -> TailState:
        """The last saved state (replaced atomically, so readable without the lock)."""
        return TailState.from_json(json.loads((self.directory / self.STATE).read_text()))

    def _save(self, state: TailState) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".zq-tail-")
        with os.fdopen(fd, "w") as fh:
            json.dump(state.to_json(), fh)
        os.replace(tmp, self.directory / self.STATE)


TailStore = MemoryTailStore | FileTailStore


class EventTail:
    """Moves the counters by the events recorded since the last tail."""

    def __init__(self, metrics: Metrics, storages: StorageSource, clock: Clock,
                 store: TailStore, *, budget: float) -> None:
        self.metrics = metrics
        self.storages = storages
        self.clock = clock
        self.store = store
        self.budget = budget

    def run_once(self) -> bool:
        """Count what is new in every backend; False when another worker was tailing."""
        with self.store.locked() as state:
            if state is None:
                return False
            deadline = time.perf_counter() + self.budget
            try:
                storages = dict(self.storages())
            except Exception as exc:  # the management store is down: next scrape
                log.warning("metrics: cannot list the pools: %s: %s", type(exc).__name__, exc)
                return True
            for pool, storage in storages.items():
                if isinstance(storage, PoolDown):
                    log.warning("metrics: pool %r is unreachable: %s", pool, storage.reason)
                    continue
                try:
                    self._tail(pool, storage, state, deadline)
                except Exception as exc:  # one backend down never stops the others
                    log.warning("metrics: cannot read the events of pool %r: %s: %s",
                                pool, type(exc).__name__, exc)
            self._forget_old(state)
            return True

    def _tail(self, pool: str, storage: Storage, state: TailState, deadline: float) -> None:
        cursor = state.cursors.get(pool)
        while time.perf_counter() < deadline:
            page = storage.events.read(after=cursor, limit=PAGE)
            horizon = self.clock.now() - SETTLE
            settled = True
            for event in page:
                if event.time > horizon:
                    settled = False
                    break
                self.count(pool, event, state)
                cursor = state.cursors[pool] = event.cursor
            if not settled or len(page) < PAGE:
                return

    def count(self, pool: str, event: Event, state: TailState) -> None:
        """Note the queue's activity and, for events since the start, move the counters."""
        self._note_queue(pool, event, state)
        if event.time < state.started:
            return
        m, project, kind = self.metrics, event.project, event.kind
        if kind == events.POSTED:
            m.by(m.posted, project).inc()
            if event.message_id:
                state.posted[event.message_id] = event.time
        elif kind == events.CLAIMED:
            m.by(m.claimed, project).inc()
        elif kind == events.DELETED:
            m.by(m.deleted, project).inc()
            posted = state.posted.pop(event.message_id or "", None)
            if posted is not None:
                m.by(m.post_to_delete, project).observe(max(0.0, event.time - posted))
        elif kind == events.RELEASED:
            m.by(m.released, project).inc()
        elif kind == events.DEAD_LETTERED:
            reason = str(event.detail.get("reason", "unknown"))
            m.by(m.dead_lettered, project, reason).inc()
            if reason == moves.REASON_REJECTED:  # a terminal reject is a move
                m.by(m.rejected, project).inc()
        elif kind == events.REJECTED:  # a retry reject
            m.by(m.rejected, project).inc()
        elif kind == events.REDRIVEN:
            m.by(m.redriven, project).inc()
        elif kind == events.BREAKER:
            if breaker_alerts.is_trip(event.detail):
                m.by(m.breaker_trips, project, event.queue).inc()
        elif kind == events.EXPIRED:
            if event.message_id is not None:
                m.by(m.expired, project).inc()
                state.posted.pop(event.message_id, None)
            else:
                m.by(m.claims_lapsed, project).inc()

    @staticmethod
    def _note_queue(pool: str, event: Event, state: TailState) -> None:
        """The queues the gauges report on, and who consumed from them lately."""
        key = queue_key(pool, event.project, event.queue)
        if event.kind == events.PURGED and event.detail.get("queue_deleted"):
            state.queues.pop(key, None)
            return
        queue = state.queues.setdefault(key, {"active": event.time, "consumers": {}})
        queue["active"] = max(queue["active"], event.time)
        rate = RATE_KINDS.get(event.kind)
        if rate is not None:
            # JSON keys: the bucket's start as text (the state is saved as JSON).
            bucket = str(int(event.time // RATE_STEP) * RATE_STEP)
            counts = queue.setdefault("rates", {}).setdefault(rate, {})
            counts[bucket] = counts.get(bucket, 0) + 1
        consumed = event.kind in (events.CLAIMED, events.RENEWED) or (
            event.kind == events.DELETED and event.detail.get("pop"))
        if consumed and event.client_id:
            queue["consumers"][event.client_id] = event.time
        target = event.detail.get("to") if event.kind == events.DEAD_LETTERED else None
        if target:
            state.queues.setdefault(queue_key(pool, event.project, target),
                                    {"active": event.time, "consumers": {}})

    def _forget_old(self, state: TailState) -> None:
        horizon = self.clock.now() - CONSUMER_WINDOW
        oldest = self.clock.now() - RATE_WINDOW - RATE_STEP
        for queue in state.queues.values():
            queue["consumers"] = {c: t for c, t in queue["consumers"].items() if t >= horizon}
            for counts in queue.get("rates", {}).values():
                for bucket in [b for b in counts if float(b) < oldest]:
                    del counts[bucket]
        if len(state.posted) > MAX_POST_TIMES:  # dicts keep insertion (post) order
            for message_id in list(state.posted)[: len(state.posted) - MAX_POST_TIMES]:
                del state.posted[message_id]
        if len(state.queues) > MAX_QUEUES:
            by_activity = sorted(state.queues, key=lambda k: state.queues[k]["active"])
            for key in by_activity[: len(state.queues) - MAX_QUEUES]:
                del state.queues[key]


def queue_rates(state: TailState, pools: Iterable[str], project: str, queue: str,
                now: float) -> dict[str, Any]:
    """A queue's counts per RATE_STEP seconds over the last RATE_WINDOW, oldest
    first, summed over the pools it was seen in (the rates endpoint's body)."""
    last = int(now // RATE_STEP) * RATE_STEP
    starts = [last - RATE_STEP * i for i in range(RATE_WINDOW // RATE_STEP - 1, -1, -1)]
    series = {rate: [0] * len(starts) for rate in RATE_KINDS.values()}
    for pool in pools:
        seen = state.queues.get(queue_key(pool, project, queue))
        for rate, counts in (seen or {}).get("rates", {}).items():
            for i, start in enumerate(starts):
                series[rate][i] += counts.get(str(start), 0)
    return {"step": RATE_STEP, "window": RATE_WINDOW, "since": starts[0],
            "settle": SETTLE, "counts": series}
