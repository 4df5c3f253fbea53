"""Schema migrations of the management store (``migrations/management/``).

Kept apart from the storage schema: its own script directory and its own
version table (``zq_management_version``), so ``zq db upgrade`` of a
storage and ``upgrade_management`` never touch each other's revisions,
even when both live in one database.
"""

from __future__ import annotations

from zq.storage.sql.migrate import SchemaMigrations

VERSION_TABLE = "zq_management_version"

MANAGEMENT = SchemaMigrations(
    "management", VERSION_TABLE, "management store", "--management"
)

head_revision = MANAGEMENT.head_revision
upgrade_management = MANAGEMENT.upgrade
current_revision = MANAGEMENT.current_revision
upgrade_engine = MANAGEMENT.upgrade_engine
require_current = MANAGEMENT.require_current
migrations_dir = MANAGEMENT.script_dir
