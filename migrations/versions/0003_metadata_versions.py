"""Metadata versions: a version per queue's metadata, a links version per project.

They make metadata changes compare-and-set (QueueController in
zq/storage/base.py): a PATCH never overwrites a change made since it read
the metadata, and two dead letter settings checked against the same links
cannot both be written. Existing queues get version "0".

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from zq.storage.sql.schema import name_type

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("queues") as batch:
        batch.add_column(sa.Column("metadata_version", sa.String(32), nullable=False,
                                   server_default="0"))
    op.create_table(
        "links",
        sa.Column("project", name_type(256), primary_key=True),
        sa.Column("version", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("links")
    with op.batch_alter_table("queues") as batch:
        batch.drop_column("metadata_version")
