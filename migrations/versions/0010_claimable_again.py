"""PostgreSQL: expired claims read by the moment their messages are claimable again.

``ix_messages_held_expiry`` (0009) keyed held messages by claim expiry; a
claim read the whole range of expired claims and sorted it by marker, so
its cost grew with the messages whose claims had expired and were not
claimed again (31 ms behind 10,000, e.g. after a consumer holding them
crashed; benchmarks/claim_scaling.py ``expired10k``). It also passed,
one by one, messages whose claim expired but whose backoff has not (the
backoff is stored as ``delay_until`` after the claim's expiry).

``ix_messages_claimable_again`` keys them by ``GREATEST(claim_expires,
delay_until)``, the moment such a message is free again, then marker (the
messages of one claim share their expiry): the claim reads the first
``limit`` of that range in index order and stops
(zq/storage/sql/postgresql.py, ``CLAIMABLE_AGAIN``), whatever the size of
the backlog. It replaces ``ix_messages_held_expiry``, which nothing else
reads.

SQLite and MariaDB/MySQL keep their general path; nothing changes there.
Building the index reads ``messages`` once and blocks writes to it
meanwhile (plain ``CREATE INDEX`` inside the migration's transaction).

Revision ID: 0010_claimable_again
Revises: 0009_claim_plans
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0010_claimable_again"
down_revision = "0009_claim_plans"
branch_labels = None
depends_on = None

# The claim's ORDER BY repeats these keys exactly
# (zq.storage.sql.postgresql.CLAIMABLE_AGAIN).
NEW = ("ix_messages_claimable_again",
       "ON messages (project, queue, (GREATEST(claim_expires, delay_until)), marker) "
       "WHERE claim_expires IS NOT NULL")
OLD = ("ix_messages_held_expiry",
       "ON messages (project, queue, claim_expires) WHERE claim_expires IS NOT NULL")


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    if not _postgresql():
        return
    op.execute(f"CREATE INDEX {NEW[0]} {NEW[1]}")
    op.execute(f"DROP INDEX {OLD[0]}")


def downgrade() -> None:
    if not _postgresql():
        return
    op.execute(f"CREATE INDEX {OLD[0]} {OLD[1]}")
    op.execute(f"DROP INDEX {NEW[0]}")
