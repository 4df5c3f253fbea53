"""Management store: pools, flavors, catalog, generation.

Revision ID: m0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from zq.storage.sql.schema import long_text, name_type

revision = "m0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "zq_flavors",
        sa.Column("name", name_type(64), primary_key=True),
        sa.Column("capabilities", long_text(), nullable=False),
    )
    op.create_table(
        "zq_pools",
        sa.Column("name", name_type(64), primary_key=True),
        sa.Column("uri", name_type(512), nullable=False, unique=True),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.Column("flavor", name_type(64), sa.ForeignKey("zq_flavors.name"), nullable=True),
        sa.Column("options", long_text(), nullable=False),
    )
    op.create_table(
        "zq_catalog",
        sa.Column("project", name_type(256), primary_key=True),
        sa.Column("queue", name_type(64), primary_key=True),
        sa.Column("pool", name_type(64), sa.ForeignKey("zq_pools.name"), nullable=False),
        sa.Column("dead_letter_queue", name_type(64), nullable=True),
    )
    op.create_index("zq_catalog_pool", "zq_catalog", ["pool"])
    op.create_index("zq_catalog_dead_letter", "zq_catalog", ["project", "dead_letter_queue"])
    state = op.create_table(
        "zq_management_state",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
    )
    op.bulk_insert(state, [{"id": 1, "generation": 0}])


def downgrade() -> None:
    op.drop_table("zq_management_state")
    op.drop_table("zq_catalog")
    op.drop_table("zq_pools")
    op.drop_table("zq_flavors")
