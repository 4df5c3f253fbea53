"""Messages count their redrives: ``redrive_count`` (0 for every existing message).

A redrive (zq.poison.moves.redriven) moves a dead letter back and adds one;
MessageRecord.redrive_count reads it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("redrive_count", sa.Integer(), nullable=False,
                                   server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("redrive_count")
