"""Notification cursors: each subscription's position in the event log, under a lease.

Read and written by zq/storage/sql/cursors.py (the notifier, zq.notifications).

Revision ID: 0008_notification_cursors
Revises: 0007_subscriptions (given as 0005; chained after the subs branch's 0007 once merged)
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_notification_cursors"
down_revision = "0007_subscriptions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "notification_cursors",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("cursor", sa.String(64), nullable=True),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("lease_until", sa.Double(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("notification_cursors")
