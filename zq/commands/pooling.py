"""Pooling for the commands: the management store and the backends to go over.

``zq serve`` prepares the management store before forking; ``zq gc`` and
``zq events export`` go over every pool it lists, or over the one configured
storage when pooling is off. Not a subcommand module (zq.cli does not list it).
"""

from __future__ import annotations

from dataclasses import dataclass

from zq.config import Config
from zq.startup import ensure_management_dir, open_reachable_management
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
