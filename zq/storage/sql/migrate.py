"""Schema migrations: find the Alembic scripts, upgrade, tell the revision.

The scripts live in the top-level ``migrations/`` directory of a source
checkout; an installed wheel ships them as data files under
``<prefix>/share/zq/migrations`` (see setup.cfg), found through the
distribution's RECORD. Two schemas use them: the
storage (``migrations/``, Alembic's default version table) and the pooling
management store (``migrations/management/``, its own version table); each
is one ``SchemaMigrations``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from zq.errors import StorageUnavailable
from zq.storage.sql import dialects
from zq.storage.uri import redact

# The storage schema's env.py as a wheel installs it (setup.cfg [options.data_files]).
MIGRATIONS_ENV = "share/zq/migrations/env.py"


def migrations_dir() -> Path:
    """The directory holding the storage schema's env.py and versions/."""
    candidates = [Path(__file__).resolve().parents[3] / "migrations"]
    installed = _installed_migrations()
    if installed is not None:
        candidates.append(installed)
    candidates.append(Path(sys.prefix) / "share" / "zq" / "migrations")
    for candidate in candidates:
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError(
        "zq's migration scripts were not found in " + " or ".join(map(str, candidates))
    )


def _installed_migrations() -> Path | None:
    """Where the installed distribution's RECORD put the migrations' env.py.

    Data files go below the install scheme's data directory, which is
    ``sys.prefix`` in a virtualenv but not under ``pip install --user`` or
    ``--prefix``; the RECORD knows either way.
    """
    try:
        files = metadata.distribution("zq").files or []
    except metadata.PackageNotFoundError:  # a source checkout that is not installed
        return None
    for file in files:
        if file.as_posix().endswith(MIGRATIONS_ENV):
            return Path(str(file.locate())).resolve().parent
    return None


@dataclass(frozen=True)
class SchemaMigrations:
    """One Alembic script directory and the version table it records itself in."""

    subdirectory: str  # below migrations_dir(); "" for the storage schema
    version_table: str
    what: str  # "database" or "management store", for messages
    upgrade_flag: str  # the flag of `zq db upgrade` that names this schema's URI

    def script_dir(self) -> Path:
        return migrations_dir() / self.subdirectory if self.subdirectory else migrations_dir()

    def _config(self) -> Config:
        config = Config()
        config.set_main_option("script_location", str(self.script_dir()))
        return config

    def head_revision(self) -> str:
        """The revision the code expects."""
        head = ScriptDirectory.from_config(self._config()).get_current_head()
        assert head is not None
        return head

    def upgrade(self, uri: str, revision: str = "head") -> None:
        """Bring the schema at ``uri`` to ``revision`` (the latest by default)."""
        engine = dialects.create_engine(uri)
        try:
            self.upgrade_engine(engine, revision)
        finally:
            engine.dispose()

    def current_revision(self, uri: str) -> str | None:
        """The schema revision at ``uri``; None when never migrated."""
        engine = dialects.create_engine(uri)
        try:
            return self.revision(engine)
        finally:
            engine.dispose()

    def upgrade_engine(self, engine: sa.Engine, revision: str = "head") -> None:
        """Upgrade through an existing engine, in one write transaction.

        On SQLite the write transaction makes concurrent first starts (several
        server workers) wait for each other instead of creating tables twice.
        """
        config = self._config()
        writer = engine.execution_options(**{dialects.WRITE_OPTION: True})
        with writer.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, revision)

    def upgrade_command(self, uri: str) -> str:
        """The command that migrates the schema at ``uri``, as the user typed it (redacted).

        The URI is the one given to zq, not the engine's: that one names
        SQLAlchemy's driver (postgresql+psycopg://), and a bare `zq db
        upgrade` migrates the default SQLite file instead.
        """
        return f"zq db upgrade {self.upgrade_flag} {redact(uri)}"

    def require_current(self, engine: sa.Engine, uri: str) -> None:
        """Raise StorageUnavailable unless the schema at ``uri`` is at the expected revision."""
        found = self.revision(engine)
        expected = self.head_revision()
        if found == expected:
            return
        self._refuse_unknown(uri, found, expected)
        problem = f"has no zq {self.what} schema" if found is None else (
            f"has schema revision {found}, older than {expected}")
        raise StorageUnavailable(
            f"The {self.what} schema is not up to date.",
            detail=f"The {self.what} {redact(uri)} {problem}; run "
            f"`{self.upgrade_command(uri)}` to migrate it.",
        )

    def ensure_current(self, engine: sa.Engine, uri: str) -> None:
        """Upgrade the schema at ``uri`` if it is behind (the embedded SQLite does this itself)."""
        found = self.revision(engine)
        expected = self.head_revision()
        if found != expected:
            self._refuse_unknown(uri, found, expected)
            self.upgrade_engine(engine)

    def revision(self, engine: sa.Engine) -> str | None:
        with engine.connect() as conn:
            context = MigrationContext.configure(
                conn, opts={"version_table": self.version_table})
            return context.get_current_revision()

    def _refuse_unknown(self, uri: str, found: str | None, expected: str) -> None:
        if found is not None and found not in self._known_revisions():
            raise StorageUnavailable(
                f"The {self.what} schema is newer than this zq.",
                detail=f"The {self.what} {redact(uri)} has schema revision {found}, "
                f"which this version of zq does not know (expected {expected}); upgrade zq.",
            )

    def _known_revisions(self) -> set[str]:
        scripts = ScriptDirectory.from_config(self._config())
        return {script.revision for script in scripts.walk_revisions()}


STORAGE = SchemaMigrations("", "alembic_version", "database", "--storage")

# The storage schema's operations, as the rest of zq calls them.
head_revision = STORAGE.head_revision
upgrade = STORAGE.upgrade
current_revision = STORAGE.current_revision
upgrade_engine = STORAGE.upgrade_engine
require_current = STORAGE.require_current
ensure_current = STORAGE.ensure_current
