"""Initial schema: queues, messages, claims, events.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from zq.storage.sql.schema import big_id, long_text, name_type

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "queues",
        sa.Column("project", name_type(256), primary_key=True),
        sa.Column("name", name_type(64), primary_key=True),
        sa.Column("metadata", long_text(), nullable=False),
        sa.Column("created", sa.Double(), nullable=False),
    )
    op.create_table(
        "messages",
        sa.Column("marker", big_id, primary_key=True, autoincrement=True),
        sa.Column("id", name_type(36), nullable=False),
        sa.Column("project", name_type(256), nullable=False),
        sa.Column("queue", name_type(64), nullable=False),
        sa.Column("body", long_text(), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("ttl", sa.Integer(), nullable=False),
        sa.Column("created", sa.Double(), nullable=False),
        sa.Column("expires", sa.Double(), nullable=False),
        sa.Column("delay_until", sa.Double(), nullable=False),
        sa.Column("client_id", sa.String(256), nullable=True),
        sa.Column("claim_id", name_type(36), nullable=True),
        sa.Column("claim_expires", sa.Double(), nullable=True),
        sa.Column("claim_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("history", long_text(), nullable=False),
        sa.UniqueConstraint("id", name="uq_messages_id"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_messages_queue_marker", "messages", ["project", "queue", "marker"])
    op.create_index("ix_messages_expires", "messages", ["expires"])
    op.create_index("ix_messages_claim_id", "messages", ["claim_id"])
    op.create_table(
        "claims",
        sa.Column("id", name_type(36), primary_key=True),
        sa.Column("project", name_type(256), nullable=False),
        sa.Column("queue", name_type(64), nullable=False),
        sa.Column("ttl", sa.Integer(), nullable=False),
        sa.Column("grace", sa.Integer(), nullable=False),
        sa.Column("created", sa.Double(), nullable=False),
        sa.Column("expires", sa.Double(), nullable=False),
        sa.Column("client_id", sa.String(256), nullable=True),
    )
    op.create_index("ix_claims_queue", "claims", ["project", "queue"])
    op.create_index("ix_claims_expires", "claims", ["expires"])
    op.create_table(
        "events",
        sa.Column("seq", big_id, primary_key=True, autoincrement=True),
        sa.Column("time", sa.Double(), nullable=False),
        sa.Column("project", name_type(256), nullable=False),
        sa.Column("queue", name_type(64), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("message_id", name_type(36), nullable=True),
        sa.Column("claim_id", name_type(36), nullable=True),
        sa.Column("client_id", sa.String(256), nullable=True),
        sa.Column("claim_count", sa.Integer(), nullable=True),
        sa.Column("detail", long_text(), nullable=False),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("events")
    op.drop_table("claims")
    op.drop_table("messages")
    op.drop_table("queues")
