"""Schema migrations: find the Alembic scripts, upgrade, tell the revision.

The scripts live in the top-level ``migrations/`` directory of a source
checkout; an installed wheel ships them as data files under
``<prefix>/share/zq/migrations`` (see setup.cfg).
"""

from __future__ import annotations

import sys
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from zq.errors import StorageUnavailable
from zq.storage.sql import dialects


def migrations_dir() -> Path:
    """The directory holding env.py and versions/."""
    candidates = [
        Path(__file__).resolve().parents[3] / "migrations",
        Path(sys.prefix) / "share" / "zq" / "migrations",
    ]
    for candidate in candidates:
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError(
        "zq's migration scripts were not found in " + " or ".join(map(str, candidates))
    )


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str:
    """The revision the code expects."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def upgrade(uri: str) -> None:
    """Bring the database at ``uri`` to the latest schema."""
    engine = dialects.create_engine(uri)
    try:
        upgrade_engine(engine)
    finally:
        engine.dispose()


def current_revision(uri: str) -> str | None:
    """The schema revision of the database at ``uri``; None when never migrated."""
    engine = dialects.create_engine(uri)
    try:
        return _revision(engine)
    finally:
        engine.dispose()


def upgrade_engine(engine: sa.Engine) -> None:
    """Upgrade through an existing engine, in one write transaction.

    On SQLite the write transaction makes concurrent first starts (several
    server workers) wait for each other instead of creating tables twice.
    """
    config = _config()
    writer = engine.execution_options(**{dialects.WRITE_OPTION: True})
    with writer.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def require_current(engine: sa.Engine) -> None:
    """Raise StorageUnavailable unless the schema is at the expected revision."""
    found = _revision(engine)
    expected = head_revision()
    if found == expected:
        return
    _refuse_unknown(engine, found, expected)
    problem = "has no zq schema" if found is None else (
        f"has schema revision {found}, older than {expected}")
    raise StorageUnavailable(
        f"The database {_where(engine)} {problem}; run `zq db upgrade` to migrate it."
    )


def ensure_current(engine: sa.Engine) -> None:
    """Upgrade the schema if it is behind (the embedded SQLite does this itself)."""
    found = _revision(engine)
    expected = head_revision()
    if found != expected:
        _refuse_unknown(engine, found, expected)
        upgrade_engine(engine)


def _refuse_unknown(engine: sa.Engine, found: str | None, expected: str) -> None:
    if found is not None and found not in _known_revisions():
        raise StorageUnavailable(
            f"The database {_where(engine)} has schema revision {found}, which this "
            f"version of zq does not know (expected {expected}); upgrade zq."
        )


def _where(engine: sa.Engine) -> str:
    return engine.url.render_as_string(hide_password=True)


def _revision(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def _known_revisions() -> set[str]:
    return {script.revision for script in ScriptDirectory.from_config(_config()).walk_revisions()}
