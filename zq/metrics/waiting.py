"""Who waits where: the waiting claims (``?wait=S``) of a server, by queue and Client-ID.

A waiting claim lives in the memory of the worker that holds it (zq.waiting),
so each worker counts its own here (``started``, ``ended``, ``woken``), which
also moves the Prometheus series ``zq_claims_waiting`` and
``zq_claim_wakeups_total``. For the stats' ``waiting`` field and the
consumers' ``waiting`` column, which any worker may be asked for, every
worker publishes its counts to a small JSON file of the server's run
directory (``waiting-PID.json``), rewritten at most every ``PUBLISH_EVERY``
seconds after a change; a reader sums its own counts and the files of the
other workers still alive. So the figures cover one ``zq serve`` (every
worker of it), are at most about ``PUBLISH_EVERY`` seconds old for the other
workers, and several servers behind a balancer each count their own.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zq.metrics.registry import Metrics, alive

log = logging.getLogger(__name__)

PUBLISH_EVERY = 0.5  # seconds: the most a worker delays publishing a change
READ_EVERY = 0.5  # seconds a reader reuses the other workers' files it read
FILE_PREFIX = "waiting-"
SEP = "\x1f"  # between project and queue in a file's keys (neither can hold it)

Counts = dict[str, dict[str, int]]  # "project SEP queue" -> {client_id: waiting claims}


class WaitingCensus:
    """This worker's waiting claims, and the server's (module documentation).

    ``directory``: the run directory the server's workers share; None (one
    process, tests) counts this process only. ``metrics``: whose gauge and
    counter to move, if any. Thread-safe.
    """

    def __init__(self, directory: str | None = None, metrics: Metrics | None = None, *,
                 publish_every: float = PUBLISH_EVERY, read_every: float = READ_EVERY,
                 monotonic: Callable[[], float] = time.monotonic, pid: int | None = None,
                 is_alive: Callable[[int], bool] = alive) -> None:
        self.directory = Path(directory) if directory else None
        self.metrics = metrics
        self.publish_every = publish_every
        self.read_every = read_every
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._mine: Counts = {}
        self._published_at = float("-inf")
        self._timer: threading.Timer | None = None
        self._others: Counts = {}
        self._others_read_at = float("-inf")
        self._pid = os.getpid() if pid is None else pid
        self._alive = is_alive

    # -- this worker's waiters -------------------------------------------------

    def started(self, project: str, queue: str, client_id: str) -> None:
        """A claim of ``client_id`` began to wait on ``queue``."""
        with self._lock:
            clients = self._mine.setdefault(project + SEP + queue, {})
            clients[client_id] = clients.get(client_id, 0) + 1
            self._changed()
        if self.metrics:
            self.metrics.by(self.metrics.claims_waiting, project).inc()

    def ended(self, project: str, queue: str, client_id: str) -> None:
        """That claim stopped waiting (claimed, 204 after its wait, client gone, shutdown)."""
        with self._lock:
            key = project + SEP + queue
            clients = self._mine.get(key, {})
            if clients.get(client_id, 0) <= 0:
                return  # never started: nothing to undo
            clients[client_id] -= 1
            if not clients[client_id]:
                del clients[client_id]
                if not clients:
                    del self._mine[key]
            self._changed()
        if self.metrics:
            self.metrics.by(self.metrics.claims_waiting, project).dec()

    def woken(self, project: str, count: int = 1) -> None:
        """``count`` waiting claims of ``project`` were woken to try to claim again."""
        if self.metrics and count > 0:
            self.metrics.by(self.metrics.claim_wakeups, project).inc(count)

    # -- the whole server --------------------------------------------------------

    def waiting(self, project: str, queue: str) -> int:
        """Claims waiting on ``queue`` in every live worker of this server."""
        return sum(self.clients(project, queue).values())

    def clients(self, project: str, queue: str) -> dict[str, int]:
        """Of ``queue``, each Client-ID with claims waiting, and how many."""
        key = project + SEP + queue
        with self._lock:
            total = dict(self._mine.get(key, {}))
        for client, count in self._other_workers().get(key, {}).items():
            total[client] = total.get(client, 0) + count
        return total

    def close(self) -> None:
        """This worker stops: its file goes (its waiters have all ended)."""
        with self._lock:
            if self._timer:
                self._timer.cancel()
                self._timer = None
        if self.directory:
            with contextlib.suppress(OSError):
                self._path(self._pid).unlink()

    # -- publishing and reading --------------------------------------------------------

    def _path(self, pid: int) -> Path:
        assert self.directory is not None
        return self.directory / f"{FILE_PREFIX}{pid}.json"

    def _changed(self) -> None:
        """Publish now, or after the rest of ``publish_every`` (lock held)."""
        if not self.directory or self._timer is not None:
            return
        wait = self._published_at + self.publish_every - self._monotonic()
        if wait <= 0:
            self._publish()
            return
        self._timer = threading.Timer(wait, self._publish_later)
        self._timer.daemon = True
        self._timer.start()

    def _publish_later(self) -> None:
        with self._lock:
            self._timer = None
            self._publish()

    def _publish(self) -> None:
        """Write this worker's counts (lock held); atomic: a reader sees old or new."""
        self._published_at = self._monotonic()
        path = self._path(self._pid)
        scratch = path.with_suffix(".tmp")
        try:
            scratch.write_text(json.dumps(self._mine))
            os.replace(scratch, path)
        except OSError as exc:  # the run directory went (server stopping): counts stay local
            log.debug("waiting census: cannot publish: %s", exc)

    def _other_workers(self) -> Counts:
        """The other live workers' published counts, re-read at most every ``read_every``."""
        if not self.directory:
            return {}
        now = self._monotonic()
        with self._lock:
            if now - self._others_read_at < self.read_every:
                return self._others
        merged: Counts = {}
        for path in self.directory.glob(f"{FILE_PREFIX}*.json"):
            pid = _pid_of(path)
            if pid is None or pid == self._pid:
                continue
            if not self._alive(pid):  # a worker that crashed: its waiters are gone
                with contextlib.suppress(OSError):
                    path.unlink()
                continue
            try:
                counts: Any = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # vanished or being replaced: next read
            for key, clients in counts.items():
                into = merged.setdefault(key, {})
                for client, count in clients.items():
                    into[client] = into.get(client, 0) + int(count)
        with self._lock:
            self._others, self._others_read_at = merged, now
        return merged


def _pid_of(path: Path) -> int | None:
    digits = path.stem.removeprefix(FILE_PREFIX)
    return int(digits) if digits.isdigit() else None
