"""The production HTTP server: gunicorn, several processes, threaded workers.

The master process prepares the storage once (creates the default data
directory, migrates an SQLite schema, checks that the backend answers; with
pooling, the same for the management store) and then forks the workers.
Each worker builds its own resolver (zq.pooling.setup.open_pools: one
storage, or the pools of the management store), its connections and its
falcon app after the fork, so no connection is ever shared between
processes, and runs its own garbage collector thread (zq.housekeeping) over
every backend of its resolver.
Workers are ``gthread``: a few threads each, so one slow client holds one
thread, not a whole worker.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication

import zq.auth
import zq.logs
from zq.clock import SystemClock
from zq.commands.options import (
    CommandError,
    ensure_default_data_dir,
    first_line,
    open_reachable_storage,
)
from zq.commands.pooling import ensure_management_dir, open_reachable_management
from zq.config import Config
from zq.housekeeping import GarbageCollector
from zq.pooling.base import Pools
from zq.pooling.migrate import upgrade_management
from zq.storage import scheme_of
from zq.storage.uri import redact

log = logging.getLogger("zq.server")

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Any]


def bind_address(host: str, port: int) -> str:
    """gunicorn's ``bind`` value; IPv6 literals need brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def gunicorn_settings(config: Config) -> dict[str, Any]:
    """The gunicorn settings that follow from zq's configuration."""
    server = config.server
    return {
        "bind": [bind_address(server.host, server.port)],
        "workers": server.workers,
        "worker_class": "gthread",
        "threads": server.threads,
        "timeout": server.timeout,
        "graceful_timeout": server.timeout,
        "proc_name": "zq",
        # gunicorn reports only problems; zq logs its own start line.
        "loglevel": "warning",
        "accesslog": None,
        # Stated rather than left to gunicorn's defaults: they bound what one
        # client can make a worker hold (request line, header count and size)
        # and how long an idle keep-alive connection keeps a thread.
        "limit_request_line": 4094,
        "limit_request_fields": 100,
        "limit_request_field_size": 8190,
        "keepalive": 5,
    }


def check_server_config(config: Config) -> None:
    """Refuse settings gunicorn would choke on, with a clear message."""
    server = config.server
    if not 0 <= server.port <= 65535:
        raise CommandError(f"port must be 0..65535, got {server.port}.")
    if server.workers < 1:
        raise CommandError(f"workers must be at least 1, got {server.workers}.")
    if server.threads < 1:
        raise CommandError(f"threads must be at least 1, got {server.threads}.")


def check_address_free(host: str, port: int) -> None:
    """Fail in one line when the address cannot be bound (gunicorn would retry noisily)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            # gunicorn sets SO_REUSEADDR too: a port in TIME_WAIT is usable.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        raise CommandError(f"cannot listen on {bind_address(host, port)}: "
                           f"{exc.strerror or exc}.") from exc


def prepare_storage(config: Config) -> str:
    """Make the storage ready before forking; returns the URI to serve from.

    The default SQLite file gets its directory created, and any SQLite
    database is migrated here, once, so workers never race on the schema.
    Other backends are migrated by the admin with ``zq db upgrade``.
    """
    uri = config.storage.resolved_uri()
    ensure_default_data_dir(config)
    if scheme_of(uri) == "sqlite":
        from zq.storage.sql.migrate import upgrade

        upgrade(uri)
    open_reachable_storage(uri).close()  # fail now, not in every worker
    return uri


def prepare_management(config: Config) -> str:
    """Make the management store ready before forking; returns its URI.

    The default SQLite file gets its directory created and an SQLite store
    is migrated here, once; a PostgreSQL or MariaDB store must already be
    current (``zq db upgrade --management``). Pools are not checked: an
    unreachable one shows in ``/v2/health`` and does not stop the others.
    """
    uri = config.pooling.resolved_management()
    ensure_management_dir(config)
    if scheme_of(uri) == "sqlite":
        try:
            upgrade_management(uri)
        except Exception as exc:  # e.g. a directory that cannot hold the file
            raise CommandError(f"management store {redact(uri)}: {first_line(exc)}") from exc
    open_reachable_management(uri).close()  # fail now, not in every worker
    return uri


def prepare(config: Config) -> str:
    """Prepare what the workers will serve from; the URI the start line names."""
    return prepare_management(config) if config.pooling.enabled else prepare_storage(config)


class ZqServer(BaseApplication):
    """gunicorn driven from Python: the settings come from a zq Config.

    ``served_uri`` is what ``prepare`` returned (the storage, or with
    pooling the management store); it names the backend in the start line.
    """

    def __init__(self, config: Config, served_uri: str) -> None:
        self.zq_config = config
        self.served_uri = served_uri
        self._pools: Pools | None = None
        self._collector: GarbageCollector | None = None
        super().__init__(prog="zq serve")

    def load_config(self) -> None:
        settings = {
            **gunicorn_settings(self.zq_config),
            "when_ready": self._when_ready,
            "worker_exit": self._worker_exit,
            "on_exit": self._on_exit,
        }
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        """Build this worker's resolver, collector and app (runs after the fork)."""
        from zq.api.app import create_app
        from zq.pooling.setup import open_pools

        clock = SystemClock()
        pools, admin = open_pools(self.zq_config, clock=clock)
        self._pools = pools
        interval = self.zq_config.gc.interval
        if interval > 0:
            # A callable, not a snapshot: pools registered later are collected too.
            self._collector = GarbageCollector(pools.storages, interval)
            self._collector.start()
        app = create_app(self.zq_config, clock=clock, pools=pools, admin=admin)
        return drain_unread_body(app, self.zq_config.limits.max_request_body)

    def close_worker(self) -> None:
        """Stop this worker's collector and release its connections."""
        if self._collector is not None:
            self._collector.stop()
        if self._pools is not None:
            self._pools.close()

    def _when_ready(self, arbiter: Any) -> None:
        # After binding, so a port of 0 shows the port actually chosen.
        urls = ", ".join(f"{listener}/v2" for listener in arbiter.LISTENERS)
        server = self.zq_config.server
        where = ("the pools of management store" if self.zq_config.pooling.enabled
                 else "storage")
        log.info(
            "zq serving %s on %s %s with %d worker(s) x %d thread(s)",
            urls, where, redact(self.served_uri), server.workers, server.threads,
        )

    def _worker_exit(self, arbiter: Any, worker: Any) -> None:
        worker.app.close_worker()

    def _on_exit(self, arbiter: Any) -> None:
        log.info("zq stopped")


def drain_unread_body(app: WSGIApp, limit: int) -> WSGIApp:
    """Read what the app left unread of a request body of at most ``limit`` bytes.

    An error answered before the body was read (a post over the size limit)
    leaves the rest of the body on the socket. gunicorn drains at most 64 KiB
    of it and otherwise drops the connection, so a keep-alive client's next
    request on it would fail; reading the rest here keeps the connection
    usable. Bodies above ``limit`` are left to gunicorn (the connection closes).
    """

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        result = app(environ, start_response)
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if 0 < length <= limit:
            stream = environ["wsgi.input"]
            while stream.read(65536):
                pass
        return result

    return wrapped


def serve(config: Config) -> None:
    """Run the server until SIGTERM (graceful) or SIGINT (quick)."""
    check_server_config(config)
    check_address_free(config.server.host, config.server.port)
    zq.auth.check_config(config)
    zq.logs.configure(config.log)
    ZqServer(config, prepare(config)).run()
