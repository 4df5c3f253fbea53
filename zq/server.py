"""The production HTTP server: granian, several processes, threaded workers.

The master process prepares what the workers serve from once (creates the
default data directory, migrates an SQLite schema, checks that the backend
answers; with pooling, the same for the management store), checks that the
address is free, and then starts the workers. Each worker builds its own
resolver (zq.pooling.setup.open_pools: one storage, or the pools of the
management store), its connections and its falcon app after the fork
(``load_worker_app``), so no connection is ever shared between processes,
and runs its own garbage collector thread (zq.housekeeping) over every
backend of its resolver. Each worker serves HTTP from granian's Rust
runtime; its event loop receives each request whole, within ``[server]
body_timeout``, and only then hands it to one of ``[server] threads``
threads that run the WSGI app (zq.buffered_wsgi), so a slow or stalled
client holds no thread, and one slow request holds one thread, not a
whole worker.

granian rather than gunicorn's gthread workers: on the same machine, worker
count and threads it served a no-op falcon endpoint about 2x and zq's post
and claim-delete workloads 1.5-1.9x as fast (docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from multiprocessing.util import Finalize
from typing import Any

import zq.auth
import zq.logs
import zq.notifications.process
from zq.buffered_wsgi import ACTIVE_REQUESTS, BufferedWSGI, WSGIApp
from zq.clock import SystemClock
from zq.config import Config
from zq.housekeeping import GarbageCollector
from zq.metrics.multiprocess import metrics_directory
from zq.metrics.waiting import WaitingCensus
from zq.notifications.status import StatusFile
from zq.pooling.base import PoolDown, Pools
from zq.pooling.migrate import upgrade_management
from zq.service.auto_redrive import AutoRedrive
from zq.startup import (
    StartupError,
    ensure_default_data_dir,
    ensure_management_dir,
    first_line,
    open_reachable_management,
    open_reachable_storage,
)
from zq.storage import REDIS_SCHEMES, check_shareable, scheme_of
from zq.storage.uri import redact
from zq.waiting import WaitingClaims
from zq.waiting.recheck import Recheck

log = logging.getLogger("zq.server")

# granian's own records go through zq's handler (zq.logs), warnings and up.
GRANIAN_LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "loggers": {name: {"level": "WARNING", "propagate": True}
                for name in ("_granian", "granian.access")},
}

# Bounds on what one client can make the server hold before the app sees
# the request (docs/security.md). Idle keep-alive connections and bodies
# being received are held by granian's runtime and event loop, not by the
# threads that run the app.
MAX_REQUEST_HEAD = 417792  # bytes of request line and headers (granian's buffer)


def bind_address(host: str, port: int) -> str:
    """``host:port``; IPv6 literals need brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def granian_settings(config: Config, port: int) -> dict[str, Any]:
    """The granian settings that follow from zq's configuration."""
    from granian.http import HTTP1Settings

    server = config.server
    return {
        "address": server.host,
        "port": port,
        # zq.buffered_wsgi runs the WSGI app on its own threads once a
        # request has fully arrived; granian's event loop receives bodies
        # (granian's WSGI interface would read them on the app's threads,
        # with no time limit).
        "interface": "rsgi",
        "workers": server.workers,
        "blocking_threads": 1,  # granian's thread into the event loop; RSGI allows one
        # Requests a worker takes at once. Waiting claims (zq.waiting) stay in
        # flight for up to [limits] max_claim_wait, at most
        # [server] max_waiting_claims of them: room for those on top of
        # granian's default, so a full house of waiting claims never keeps
        # other requests out (more waiting claims answer at once). The
        # others are still served ACTIVE_REQUESTS at a time (zq.buffered_wsgi).
        "backpressure": server.max_waiting_claims + ACTIVE_REQUESTS,
        "websockets": False,
        # A worker that does not stop within the timeout is killed.
        "workers_kill_timeout": server.timeout or None,
        "respawn_failed_workers": True,
        "log_dictconfig": GRANIAN_LOGGING,
        "log_level": "warning",
        "log_access": False,
        # The request line and headers must arrive within the timeout.
        "http1_settings": HTTP1Settings(header_read_timeout=server.timeout * 1000 or 30000,
                                        keep_alive=True, max_buffer_size=MAX_REQUEST_HEAD),
    }


def check_server_config(config: Config) -> None:
    """Refuse settings the server would choke on, with a clear message."""
    server = config.server
    problem = server.problem()
    if problem is not None:
        raise StartupError(problem)
    if not config.pooling.enabled:
        check_shareable(config.storage.resolved_uri(), server.workers)


def check_address_free(host: str, port: int) -> int:
    """The port to serve on; fails in one line when the address cannot be bound.

    Every granian worker binds the address itself (SO_REUSEPORT), so port 0
    is resolved here, once, to a free port for all of them, and a taken port
    fails here rather than in each worker.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            # A port in TIME_WAIT is usable, as it is for the server.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
            return probe.getsockname()[1]
    except OSError as exc:
        raise StartupError(f"cannot listen on {bind_address(host, port)}: "
                           f"{exc.strerror or exc}.") from exc


def prepare_storage(config: Config) -> str:
    """Make the storage ready before forking; returns the URI to serve from.

    The default SQLite file gets its directory created, and any SQLite
    database is migrated here, once, so workers never race on the schema.
    Other backends are migrated by the admin with ``zq db upgrade``.
    """
    uri = config.storage.resolved_uri()
    if config.redis.wait_replicas and scheme_of(uri) not in REDIS_SCHEMES:
        raise StartupError(
            f"[redis] wait_replicas = {config.redis.wait_replicas} cannot take effect: the "
            f"storage {redact(uri)} is not Redis; remove the setting."
        )
    if config.redis.coalesce and scheme_of(uri) not in REDIS_SCHEMES:
        raise StartupError(
            f"[redis] coalesce cannot take effect: the storage {redact(uri)} is not Redis; "
            "remove the setting (the SQL storages have [sql] group_commit)."
        )
    ensure_default_data_dir(config)
    if scheme_of(uri) == "sqlite":
        from zq.storage.sql.migrate import upgrade

        upgrade(uri)
    open_reachable_storage(uri, config.redis).close()  # fail now, not in every worker
    return uri


def prepare_management(config: Config) -> str:
    """Make the management store ready before forking; returns its URI.

    The default SQLite file gets its directory created and an SQLite store
    is migrated here, once; a PostgreSQL or MariaDB store must already be
    current (``zq db upgrade --management``). Pools are not probed: an
    unreachable one shows in ``/v2/health`` and does not stop the others; a
    pool in one process's memory (mongomock) is refused with several workers.
    """
    uri = config.pooling.resolved_management()
    ensure_management_dir(config)
    if scheme_of(uri) == "sqlite":
        try:
            upgrade_management(uri)
        except Exception as exc:  # e.g. a directory that cannot hold the file
            raise StartupError(f"management store {redact(uri)}: {first_line(exc)}") from exc
    store = open_reachable_management(uri)  # fail now, not in every worker
    try:
        for pool in store.registry.list_pools():
            check_shareable(pool.uri, config.server.workers)
    finally:
        store.close()
    return uri


def prepare(config: Config) -> str:
    """Prepare what the workers will serve from; the URI the start line names."""
    return prepare_management(config) if config.pooling.enabled else prepare_storage(config)


@dataclass
class Worker:
    """One worker process's app and what it holds: resolver, collector, waiting claims."""

    app: WSGIApp
    pools: Pools
    collector: GarbageCollector | None
    waiting: WaitingClaims | None = None

    def close(self) -> None:
        """Stop the collector and release every connection."""
        if self.collector is not None:
            self.collector.stop()
        if self.waiting is not None and self.waiting.census is not None:
            self.waiting.census.close()
        self.pools.close()


def open_worker(config: Config, metrics_dir: str | None = None,
                notifier_status: str | None = None, run_dir: str | None = None) -> Worker:
    """This worker's resolver, collector and app (runs in the worker, after the fork).

    ``metrics_dir``: the directory every worker writes its metrics to
    (zq.metrics.multiprocess), when metrics are enabled. ``notifier_status``:
    the file where the master process reports the notifier's state, for
    ``GET /v2/health`` (zq.notifications.status). ``run_dir``: the server's
    directory where each worker publishes its waiting claims (zq.metrics.waiting).
    """
    from zq.api.app import create_app
    from zq.pooling.setup import open_pools

    clock = SystemClock()
    pools, admin = open_pools(config, clock=clock, processes=config.server.workers)
    collector = None
    if config.gc.interval > 0:
        # A callable, not a snapshot: pools registered later are collected too.
        collector = GarbageCollector(pools.storages, config.gc.interval,
                                     after_collect=AutoRedrive(config.limits, clock).run_due)
        collector.start()
    status = StatusFile(notifier_status) if notifier_status else None
    census = WaitingCensus(run_dir)
    waiting = open_waiting(config, pools, clock, census)
    app = create_app(config, clock=clock, pools=pools, admin=admin, metrics_dir=metrics_dir,
                     notifier_status=status, on_claimable=waiting.wake_threadsafe,
                     waiting=census)
    return Worker(app, pools, collector, waiting)


def open_waiting(config: Config, pools: Pools, clock: SystemClock,
                 census: WaitingCensus | None = None) -> WaitingClaims:
    """This worker's waiting claims, re-checked over every backend of ``pools``."""
    def storages() -> list[Any]:
        return [s for s in pools.storages().values() if not isinstance(s, PoolDown)]

    recheck = Recheck(storage_for=pools.storage_for, storages=storages,
                      interval=config.server.wait_recheck_interval, clock=clock)
    return WaitingClaims(capacity=config.server.max_waiting_claims, recheck=recheck,
                         census=census)


def load_worker_app(config: Config, metrics_dir: str | None = None,
                    notifier_status: str | None = None,
                    run_dir: str | None = None) -> BufferedWSGI:
    """What granian runs in each worker process."""
    # A forked worker inherits the master's SIGTERM handler, which only flags
    # the master's own loop: a SIGTERM arriving while this worker still loads
    # would be lost and the worker would serve on until killed. Until granian
    # installs the worker's handlers (after this returns), it simply ends it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    worker = open_worker(config, metrics_dir, notifier_status, run_dir)
    # multiprocessing runs these at a worker's exit (atexit handlers do not run there).
    Finalize(worker, worker.close, exitpriority=10)
    return BufferedWSGI(worker.app, threads=config.server.threads,
                        body_timeout=config.server.body_timeout,
                        max_body=config.limits.max_request_body, waiting=worker.waiting)


def announce(config: Config, served_uri: str, port: int) -> None:
    """The start line: address, backend (no password), workers and threads."""
    server = config.server
    where = "the pools of management store" if config.pooling.enabled else "storage"
    log.info(
        "zq serving http://%s/v2 on %s %s with %d worker(s) x %d thread(s)",
        bind_address(server.host, port), where, redact(served_uri),
        server.workers, server.threads,
    )
    if config.pooling.enabled and config.storage.uri:
        log.warning("[storage] uri %s is not used: with pooling on, queues live on the "
                    "pools of the management store", redact(config.storage.uri))


def serve(config: Config) -> None:
    """Run the server until SIGTERM or SIGINT (requests in flight are completed)."""
    from granian import Granian

    check_server_config(config)
    server = config.server
    port = check_address_free(server.host, server.port)
    zq.auth.check_config(config)
    zq.logs.configure(config.log)
    served_uri = prepare(config)
    granian = Granian("zq", **granian_settings(config, port))
    with contextlib.ExitStack() as stack:
        metrics_dir = None
        if config.metrics.enabled:
            metrics_dir = stack.enter_context(metrics_directory(time.time()))
        announce(config, served_uri, port)
        # Subscriptions' notifications: a process of its own, restarted when it
        # dies, its state in a file the workers read (zq.notifications.process).
        run_dir = tempfile.mkdtemp(prefix="zq-run-")
        stack.callback(shutil.rmtree, run_dir, ignore_errors=True)
        status_path = os.path.join(run_dir, "notifier.json")
        notifier = zq.notifications.process.Supervisor(
            config, metrics_dir, StatusFile(status_path), clock=SystemClock())
        notifier.start()
        stack.callback(notifier.stop)
        granian.serve(target_loader=partial(load_worker_app, config, metrics_dir, status_path,
                                             run_dir),
                      wrap_loader=False)
    log.info("zq stopped")
