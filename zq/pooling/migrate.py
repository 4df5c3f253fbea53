"""Schema migrations of the management store (``migrations/management/``).

Kept apart from the storage schema: its own script directory and its own
version table (``zq_management_version``), so ``zq db upgrade`` of a
storage and ``upgrade_management`` never touch each other's revisions,
even when both live in one database.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from zq.errors import StorageUnavailable
from zq.storage.sql import dialects
from zq.storage.sql import migrate as storage_migrate

VERSION_TABLE = "zq_management_version"


def migrations_dir() -> Path:
    """The directory holding the management store's env.py and versions/."""
    return storage_migrate.migrations_dir() / "management"


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str:
    """The management schema revision the code expects."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def upgrade_management(uri: str) -> None:
    """Bring the management store at ``uri`` to the latest schema."""
    engine = dialects.create_engine(uri)
    try:
        upgrade_engine(engine)
    finally:
        engine.dispose()


def current_revision(uri: str) -> str | None:
    """The management schema revision at ``uri``; None when never migrated."""
    engine = dialects.create_engine(uri)
    try:
        return _revision(engine)
    finally:
        engine.dispose()


def upgrade_engine(engine: sa.Engine) -> None:
    """Upgrade through an existing engine, in one write transaction."""
    config = _config()
    writer = engine.execution_options(**{dialects.WRITE_OPTION: True})
    with writer.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def require_current(engine: sa.Engine) -> None:
    """StorageUnavailable unless the management schema is at the expected revision."""
    found = _revision(engine)
    expected = head_revision()
    if found != expected:
        where = engine.url.render_as_string(hide_password=True)
        raise StorageUnavailable(
            f"The management store {where} has schema revision {found or 'none'}, "
            f"expected {expected}; run `zq db upgrade --management URI` to migrate it."
        )


def _revision(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return context.get_current_revision()
