"""The breaker and blame split (zq.storage.breakers, zq.poison.blame).

``messages`` gets ``forgiven_count`` (deliveries not charged to the
message: DeadLetterPolicy.is_exhausted compares ``claim_count -
forgiven_count``), ``last_failure`` (its last failed delivery's
description) and ``lapsed_with`` (JSON list of the distinct Client-IDs its
claims lapsed with). ``breakers`` keeps each queue's breaker record and
``breaker_outcomes`` the failures and successes of its window. Existing
messages get 0, NULL and NULL: Zaqar's counting, as before.

Revision ID: 0011_breaker
Revises: 0010_claimable_again
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from zq.storage.sql.schema import big_id, name_type

revision = "0011_breaker"
down_revision = "0010_claimable_again"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("forgiven_count", sa.Integer(), nullable=False,
                                        server_default="0"))
    op.add_column("messages", sa.Column("last_failure", sa.String(200), nullable=True))
    op.add_column("messages", sa.Column("lapsed_with", sa.String(1024), nullable=True))
    op.create_table(
        "breakers",
        sa.Column("project", name_type(256), primary_key=True),
        sa.Column("queue", name_type(64), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("since", sa.Double(), nullable=False),
        sa.Column("description", sa.String(200), nullable=True),
        sa.Column("tripped_at", sa.Double(), nullable=True),
        sa.Column("closed_at", sa.Double(), nullable=True),
        sa.Column("redrive_due", sa.Boolean(), nullable=False),
        sa.Column("next_probe", sa.Double(), nullable=True),
        sa.Column("probe_claim_id", name_type(36), nullable=True),
        sa.Column("probe_successes", sa.Integer(), nullable=False),
    )
    op.create_table(
        "breaker_outcomes",
        sa.Column("seq", big_id, primary_key=True, autoincrement=True),
        sa.Column("project", name_type(256), nullable=False),
        sa.Column("queue", name_type(64), nullable=False),
        sa.Column("time", sa.Double(), nullable=False),
        sa.Column("message_id", name_type(36), nullable=True),
        sa.Column("description", sa.String(200), nullable=True),
    )
    op.create_index("ix_breaker_outcomes_queue_time", "breaker_outcomes",
                    ["project", "queue", "time"])


def downgrade() -> None:
    op.drop_index("ix_breaker_outcomes_queue_time", table_name="breaker_outcomes")
    op.drop_table("breaker_outcomes")
    op.drop_table("breakers")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("lapsed_with")
        batch.drop_column("last_failure")
        batch.drop_column("forgiven_count")
