"""Pooling for the commands: the management store and the backends to go over.

``zq serve`` prepares the management store before forking; ``zq gc`` and
``zq events export`` go over every pool it lists, or over the one configured
storage when pooling is off. Not a subcommand module (zq.cli does not list it).
"""

from __future__ import annotations

from dataclasses import dataclass

from zq.commands.options import CommandError, first_line
from zq.config import Config, default_data_dir
from zq.pooling.store import ManagementStore, open_management
from zq.storage.uri import redact


@dataclass(frozen=True)
class StorageTarget:
    """One storage a maintenance command works on."""

    uri: str
    pool: str | None = None  # the pool's name; None without pooling

    @property
    def label(self) -> str:
        """How messages name it: the pool and its URI, or the URI (password hidden)."""
        if self.pool is None:
            return redact(self.uri)
        return f"pool {self.pool!r} ({redact(self.uri)})"


def ensure_management_dir(config: Config) -> None:
    """Create the data directory when the default SQLite management store is used."""
    if not config.pooling.management:
        default_data_dir().mkdir(parents=True, exist_ok=True)


def open_reachable_management(uri: str) -> ManagementStore:
    """Open the management store at ``uri`` and check it answers; CommandError if not.

    An SQLite store is created or migrated on opening; a PostgreSQL or
    MariaDB one must already be at the current schema (``zq db upgrade
    --management``).
    """
    try:
        store = open_management(uri)
    except Exception as exc:  # StorageUnavailable, or a driver's own error
        raise CommandError(f"management store {redact(uri)}: {first_line(exc)}") from exc
    if not store.ping():
        store.close()
        raise CommandError(f"management store {redact(uri)} is unreachable.")
    return store


def backends(config: Config) -> list[StorageTarget]:
    """What a maintenance command goes over: every pool, or the configured storage."""
    if not config.pooling.enabled:
        return [StorageTarget(config.storage.resolved_uri())]
    ensure_management_dir(config)
    store = open_reachable_management(config.pooling.resolved_management())
    try:
        return [StorageTarget(pool.uri, pool.name) for pool in store.registry.list_pools()]
    finally:
        store.close()
