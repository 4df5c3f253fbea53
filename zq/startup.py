"""Opening and checking the storage and the management store before any work.

Shared by the command line (zq.commands) and the server (zq.server), which
both stand above it: each opens what it needs, finds out now whether it
answers, and fails in one line. The CLI maps StartupError to exit status 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zq.config import Config, RedisConfig, default_data_dir
from zq.errors import ZqError
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.uri import redact

if TYPE_CHECKING:
    from zq.pooling.store import ManagementStore


class StartupError(Exception):
    """What zq was asked to start on cannot be used; the message says why, in one line."""


def first_line(exc: BaseException) -> str:
    """An error's first line (SQLAlchemy appends SQL and links below the driver's message)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def ensure_default_data_dir(config: Config) -> None:
    """Create the data directory when the embedded SQLite default is used."""
    if not config.storage.uri:
        default_data_dir().mkdir(parents=True, exist_ok=True)


def ensure_management_dir(config: Config) -> None:
    """Create the data directory when the default SQLite management store is used."""
    if not config.pooling.management:
        default_data_dir().mkdir(parents=True, exist_ok=True)


def open_reachable_storage(uri: str, redis: RedisConfig | None = None) -> Storage:
    """Connect to ``uri`` and check that it answers; StartupError if not."""
    try:
        storage = open_storage(uri, redis=redis)
    except ZqError as exc:
        raise StartupError(f"storage {redact(uri)}: {exc}") from exc
    if not storage.ping():
        storage.close()
        raise StartupError(f"storage {redact(uri)} is unreachable.")
    return storage


def open_reachable_management(uri: str) -> ManagementStore:
    """Open the management store at ``uri`` and check it answers; StartupError if not.

    An SQLite store is created or migrated on opening; a PostgreSQL or
    MariaDB one must already be at the current schema (``zq db upgrade
    --management``).
    """
    # SQLAlchemy and Alembic load only for a command that opens the store.
    from zq.pooling.store import open_management

    try:
        store = open_management(uri)
    except Exception as exc:  # StorageUnavailable, or a driver's own error
        raise StartupError(f"management store {redact(uri)}: {first_line(exc)}") from exc
    if not store.ping():
        store.close()
        raise StartupError(f"management store {redact(uri)} is unreachable.")
    return store
