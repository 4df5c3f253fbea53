"""PostgreSQL: each event records the transaction that wrote it.

``events.xid`` (``xid8``, default ``pg_current_xact_id()``) lets the event
log be read in an order no later commit can break: in (xid, seq) order,
below the oldest transaction still in flight (zq/storage/sql/commit_order.py).
A column default, so every insert gets it, also those of the one-statement
WITH queries that run without BEGIN. Existing rows get the migration's own
xid (a volatile default is evaluated per row while the table is rewritten),
so they sort before every later event, in their seq order. SQLite needs no
such column (its writers are serialized) and MariaDB/MySQL offers no
transaction id to record; the migration changes nothing there.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    if not _postgresql():
        return
    op.execute("ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id()")
    op.execute("CREATE INDEX ix_events_xid_seq ON events (xid, seq)")


def downgrade() -> None:
    if not _postgresql():
        return
    op.execute("DROP INDEX ix_events_xid_seq")
    op.execute("ALTER TABLE events DROP COLUMN xid")
