"""The notifier process that ``zq serve`` starts next to granian's workers.

A process, not a thread of a worker: granian forks several workers and
each would run its own notifier (more leases, more reads of the log, and a
slow webhook contending for the GIL of request threads); one notifier per
``zq serve`` keeps deliveries off every request thread and restarts with
the server. It is spawned (fresh interpreter, no inherited locks or
connections) and ends when told (SIGTERM from the server at shutdown) or
when its server has gone (checked every tick: a SIGKILLed server must not
leave a notifier behind holding leases). The server's ``Supervisor``
restarts one that died otherwise, and reports its state to
``GET /v2/health`` (zq.notifications.status).

Its counters (``zq_notifications_sent_total``, ``_failed_total``) go to
the server's metrics directory, so any worker's scrape shows them.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from multiprocessing.process import BaseProcess

from zq.clock import Clock
from zq.config import Config
from zq.notifications.pump import Report, Reporter
from zq.notifications.status import DISABLED, DOWN, RUNNING, STOPPED, StatusFile

log = logging.getLogger("zq.notifications")

STOP_TIMEOUT = 15.0  # seconds the server waits for the notifier at shutdown


def spawn(config: Config, metrics_dir: str | None) -> BaseProcess:
    """Start one notifier process."""
    context = multiprocessing.get_context("spawn")
    process = context.Process(target=run, args=(config, metrics_dir, os.getpid()),
                              name="zq-notifier", daemon=True)
    process.start()
    return process


def stop(process: BaseProcess | None) -> None:
    """Ask the notifier to finish its attempts in flight and give its leases up."""
    if process is None or not process.is_alive():
        return
    process.terminate()  # SIGTERM: run() stops ticking, waits, releases leases
    process.join(STOP_TIMEOUT)
    if process.is_alive():
        process.kill()
        process.join()


def exit_reason(exitcode: int | None) -> str:
    """How a process ended, in words: ``exit status 1``, ``killed by SIGKILL``."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


class Supervisor:
    """Keeps the notifier running beside the server: restarts it when it dies.

    Restart, not stop the server: the notifier keeps no state of its own
    (cursors and leases are in the backend, delivery is at least once), so a
    new one carries on where the dead one stopped, while stopping the server
    would take the whole queue API away from producers and consumers for a
    side job. A notifier that keeps dying is restarted after a bounded
    backoff (``RESTART_DELAY`` doubled per death in a row, at most
    ``MAX_RESTART_DELAY``; a run of ``STABLE_SECONDS`` forgives earlier
    deaths), each death logged as an error, and ``GET /v2/health`` shows its
    state (zq.notifications.status) until it runs again.

    ``check`` does one look; the supervisor's thread calls it every
    ``POLL_SECONDS``, tests call it with a manual clock.
    """

    RESTART_DELAY = 1.0
    MAX_RESTART_DELAY = 60.0
    STABLE_SECONDS = 60.0
    POLL_SECONDS = 0.5

    def __init__(self, config: Config, metrics_dir: str | None, status: StatusFile | None, *,
                 clock: Clock, spawner: Callable[[Config, str | None], BaseProcess] = spawn
                 ) -> None:
        self._config = config
        self._metrics_dir = metrics_dir
        self._status = status
        self._clock = clock
        self._spawn = spawner
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.process: BaseProcess | None = None
        self.restarts = 0
        self._deaths_in_a_row = 0
        self._started_at = 0.0
        self._restart_at: float | None = None
        self._last_exit: str | None = None

    def start(self) -> None:
        """Start the notifier (unless disabled) and the thread that watches it."""
        if not self._config.notifications.enabled:
            log.info("notifications are disabled ([notifications] enabled = false)")
            self._write(DISABLED)
            return
        if not self._config.notifications.allowed_hosts:
            log.warning("notifications: [notifications] allowed_hosts is empty, no webhook "
                        "will be sent until it lists the subscribers' hosts")
        notifications = self._config.notifications
        if notifications.smtp_host and not notifications.require_confirmation:
            log.warning("notifications: mail is on ([notifications] smtp_host) without "
                        "require_confirmation: any tenant can have this server mail any "
                        "address (docs/notifications.md, Mail)")
        self._launch()
        self._thread = threading.Thread(target=self._watch, daemon=True,
                                        name="zq-notifier-supervisor")
        self._thread.start()

    def stop(self) -> None:
        """Stop watching, then stop the notifier (its attempts in flight finish)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        stop(self.process)
        if self.process is not None:
            self._write(STOPPED)

    def check(self) -> None:
        """One look: note a death and plan the restart, or restart when it is due."""
        now = self._clock.now()
        if self._restart_at is not None:
            if now >= self._restart_at:
                self._restart_at = None
                self.restarts += 1
                self._launch()
                log.warning("notifier restarted (pid %s, restart %d)", self.process.pid
                            if self.process else None, self.restarts)
            return
        process = self.process
        if process is None or process.is_alive():
            return
        process.join(0)
        self._last_exit = exit_reason(process.exitcode)
        lived = now - self._started_at
        self._deaths_in_a_row = 1 if lived >= self.STABLE_SECONDS else self._deaths_in_a_row + 1
        delay = min(self.MAX_RESTART_DELAY,
                    self.RESTART_DELAY * 2 ** (self._deaths_in_a_row - 1))
        self._restart_at = now + delay
        log.error("notifier (pid %s) died (%s) after %.0f s; no notification is sent until "
                  "it is restarted in %g s", process.pid, self._last_exit, lived, delay)
        self._write(DOWN, pid=process.pid, last_exit=self._last_exit,
                    restart_in_seconds=delay)

    def _launch(self) -> None:
        self.process = self._spawn(self._config, self._metrics_dir)
        self._started_at = self._clock.now()
        self._write(RUNNING, pid=self.process.pid)

    def _watch(self) -> None:
        while not self._stop.wait(self.POLL_SECONDS):
            try:
                self.check()
            except Exception:  # a failed spawn, say: logged, tried again at the next look
                log.exception("supervising the notifier failed")

    def _write(self, state: str, **details: object) -> None:
        if self._status is None:
            return
        details.setdefault("restarts", self.restarts)
        if self._last_exit is not None:
            details.setdefault("last_exit", self._last_exit)
        try:
            self._status.write(state, **details)
        except OSError:
            log.exception("writing the notifier's status failed")


def run(config: Config, metrics_dir: str | None, server_pid: int) -> None:
    """The notifier process's body."""
    import zq.logs
    from zq.clock import SystemClock
    from zq.encryption import BodyCipher
    from zq.notifications.pump import fetcher
    from zq.notifications.runner import Notifier
    from zq.pooling.setup import open_pools

    zq.logs.configure(config.log)
    stop_event = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop_event.set())
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server's Ctrl-C ends us by SIGTERM

    report = _reporter(config, metrics_dir)
    clock = SystemClock()
    pools, _admin = open_pools(config, clock=clock, processes=1)
    cipher = BodyCipher.from_config(config.encryption)
    notifier = Notifier(pools.storages, config.notifications, clock,
                        fetch_for=lambda storage: fetcher(storage, cipher), report=report,
                        signed_urls=config.signed_urls)
    log.info("notifier %s started (pid %d)", notifier.owner, os.getpid())

    def watch_server() -> None:
        while not stop_event.wait(1.0):
            if os.getppid() != server_pid:
                log.warning("notifier: its server %d has gone; stopping", server_pid)
                stop_event.set()

    threading.Thread(target=watch_server, daemon=True, name="zq-notifier-watch").start()
    try:
        notifier.run(stop_event)
    finally:
        notifier.close()
        pools.close()


def _reporter(config: Config, metrics_dir: str | None) -> Reporter:
    """Count each attempt in the server's metrics (nothing when metrics are off)."""
    if not (config.metrics.enabled and metrics_dir):
        return lambda report: None
    from zq.metrics.registry import Metrics

    metrics = Metrics(config.metrics, multiprocess_dir=metrics_dir)

    def report(outcome: Report) -> None:
        counter = metrics.notifications_sent if outcome.sent else metrics.notifications_failed
        metrics.by(counter, outcome.project).inc()

    return report
