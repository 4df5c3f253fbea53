"""The consumer log: one row per claim (ConsumerLog in zq/storage/base.py).

``GET /v2/queues/{q}/consumers`` and ``_suspect_lapsed_consumers``
(zq.poison.consumers) read it. Starts empty: claims made before the upgrade are
not in it.

Revision ID: 0006_consumer_claims
Revises: 0005
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from zq.storage.sql.schema import name_type

revision = "0006_consumer_claims"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "consumer_claims",
        sa.Column("claim_id", name_type(36), primary_key=True),
        sa.Column("project", name_type(256), nullable=False),
        sa.Column("queue", name_type(64), nullable=False),
        sa.Column("client_id", sa.String(256), nullable=False),
        sa.Column("ttl", sa.Integer(), nullable=False),
        sa.Column("claimed", sa.Double(), nullable=False),
        sa.Column("expires", sa.Double(), nullable=False),
        sa.Column("settled", sa.Double(), nullable=True),
    )
    op.create_index("ix_consumer_claims_queue_expires", "consumer_claims",
                    ["project", "queue", "expires"])


def downgrade() -> None:
    op.drop_index("ix_consumer_claims_queue_expires", table_name="consumer_claims")
    op.drop_table("consumer_claims")
