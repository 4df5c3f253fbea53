"""PostgreSQL: two partial indexes that make a claim's plan right by construction.

A claim takes free messages in queue order. Through
``ix_messages_queue_marker`` it walked past every message held by a live
claim at the head of the queue (12.6 ms behind 10,000 held ones), and with
statistics the planner may walk the primary key instead, past other queues
too. A claim now reads two disjoint sets (zq/storage/sql/postgresql.py):

- ``ix_messages_free_marker``: messages no claim ever held or whose claim
  was released or deleted (``claim_expires IS NULL``), keyed by queue and
  ``CASE WHEN claim_expires IS NULL THEN marker END``. The claim orders by
  that same expression, which no other index provides, so this index is
  the only ordered path, with or without statistics, and held messages are
  not in it.
- ``ix_messages_held_expiry``: messages with a claim (live or expired), by
  queue and claim expiry: the claim reads only those whose claim has
  expired (a range), whatever the number still held.

SQLite and MariaDB/MySQL keep their general path; nothing changes there.

Revision ID: 0009_claim_plans
Revises: 0008_notification_cursors (written on 0005; re-chained when main was merged)
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0009_claim_plans"
down_revision = "0008_notification_cursors"
branch_labels = None
depends_on = None

# name -> definition; the claim statement's ORDER BY repeats the free
# index's expression exactly (zq.storage.sql.postgresql.FREE_ORDER).
INDEXES = {
    "ix_messages_free_marker":
        "ON messages (project, queue, (CASE WHEN claim_expires IS NULL THEN marker END)) "
        "WHERE claim_expires IS NULL",
    "ix_messages_held_expiry":
        "ON messages (project, queue, claim_expires) WHERE claim_expires IS NOT NULL",
}


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    if not _postgresql():
        return
    for name, definition in INDEXES.items():
        op.execute(f"CREATE INDEX {name} {definition}")


def downgrade() -> None:
    if not _postgresql():
        return
    for name in INDEXES:
        op.execute(f"DROP INDEX {name}")
