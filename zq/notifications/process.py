"""The notifier process that ``zq serve`` starts next to granian's workers.

A process, not a thread of a worker: granian forks several workers and
each would run its own notifier (more leases, more reads of the log, and a
slow webhook contending for the GIL of request threads); one notifier per
``zq serve`` keeps deliveries off every request thread and restarts with
the server. It is spawned (fresh interpreter, no inherited locks or
connections) and ends when told (SIGTERM from the server at shutdown) or
when its server has gone (checked every tick: a SIGKILLed server must not
leave a notifier behind holding leases).

Its counters (``zq_notifications_sent_total``, ``_failed_total``) go to
the server's metrics directory, so any worker's scrape shows them.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from multiprocessing.process import BaseProcess

from zq.config import Config
from zq.notifications.pump import Report, Reporter

log = logging.getLogger("zq.notifications")

STOP_TIMEOUT = 15.0  # seconds the server waits for the notifier at shutdown


def start(config: Config, metrics_dir: str | None) -> BaseProcess | None:
    """Start the notifier process, unless ``[notifications] enabled`` is false."""
    if not config.notifications.enabled:
        log.info("notifications are disabled ([notifications] enabled = false)")
        return None
    context = multiprocessing.get_context("spawn")
    process = context.Process(target=run, args=(config, metrics_dir, os.getpid()),
                              name="zq-notifier", daemon=True)
    process.start()
    if not config.notifications.allowed_hosts:
        log.warning("notifications: [notifications] allowed_hosts is empty, no webhook "
                    "will be sent until it lists the subscribers' hosts")
    if config.notifications.smtp_host and not config.notifications.require_confirmation:
        log.warning("notifications: mail is on ([notifications] smtp_host) without "
                    "require_confirmation: any tenant can have this server mail any address "
                    "(docs/notifications.md, Mail)")
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
