"""Subscriptions of queues to webhooks and mail addresses (Zaqar v2's notifications).

One row per subscription; unique by (project, queue, SHA-256 of the
subscriber), expiring at ``expires`` (removed by gc).

Revision ID: 0007_subscriptions
Revises: 0006_consumer_claims
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from zq.storage.sql.schema import ID, PROJECT, QUEUE, long_text, name_type

revision = "0007_subscriptions"
down_revision = "0006_consumer_claims"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "subscriptions",
        sa.Column("id", name_type(ID), primary_key=True),
        sa.Column("project", name_type(PROJECT), nullable=False),
        sa.Column("queue", name_type(QUEUE), nullable=False),
        sa.Column("subscriber", sa.Text(), nullable=False),
        sa.Column("subscriber_key", sa.String(64), nullable=False),
        sa.Column("ttl", sa.Integer(), nullable=False),
        sa.Column("created", sa.Double(), nullable=False),
        sa.Column("expires", sa.Double(), nullable=False),
        sa.Column("options", long_text(), nullable=False),
        sa.Column("confirmed", sa.Boolean(), nullable=False),
        sa.UniqueConstraint("project", "queue", "subscriber_key",
                            name="uq_subscriptions_subscriber"),
    )
    op.create_index("ix_subscriptions_expires", "subscriptions", ["expires"])


def downgrade() -> None:
    op.drop_index("ix_subscriptions_expires", table_name="subscriptions")
    op.drop_table("subscriptions")
