"""A pool may name a flavor that does not exist yet (as Zaqar).

Drops the foreign key from ``zq_pools.flavor`` to ``zq_flavors.name``: an
admin script may register its pools before their flavor; a flavor's
``pool_list`` is still read from the pools that name it.

Revision ID: m0002
Revises: m0001
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

from zq.storage.sql.schema import name_type

revision = "m0002"
down_revision = "m0001"
branch_labels = None
depends_on = None

# The name SQLite's batch mode gives the (unnamed) foreign key to drop it.
NAMING = {"fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s"}
SQLITE_FK = "fk_zq_pools_flavor_zq_flavors"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        _rebuild_sqlite_pools(lambda batch: batch.drop_constraint(SQLITE_FK,
                                                                  type_="foreignkey"))
        return
    for key in sa.inspect(bind).get_foreign_keys("zq_pools"):
        if key["referred_table"] == "zq_flavors" and key["name"]:
            op.drop_constraint(key["name"], "zq_pools", type_="foreignkey")


def downgrade() -> None:
    # Pools naming a missing flavor lose it: the key cannot hold them.
    op.execute(
        "UPDATE zq_pools SET flavor = NULL WHERE flavor IS NOT NULL "
        "AND flavor NOT IN (SELECT name FROM zq_flavors)"
    )
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_sqlite_pools(lambda batch: batch.create_foreign_key(
            SQLITE_FK, "zq_flavors", ["flavor"], ["name"]))
        return
    op.create_foreign_key(None, "zq_pools", "zq_flavors", ["flavor"], ["name"])


def _rebuild_sqlite_pools(change: Callable[[Any], None]) -> None:
    """SQLite changes a constraint by rebuilding the table.

    Dropping zq_pools while zq_catalog's rows refer to it fails with foreign
    keys on (and they cannot be turned off inside the migration's
    transaction): the catalog is set aside and rebuilt around it.
    """
    op.execute("CREATE TABLE zq_catalog_m0002 AS SELECT * FROM zq_catalog")
    op.drop_table("zq_catalog")
    with op.batch_alter_table("zq_pools", recreate="always",
                              naming_convention=NAMING) as batch:
        change(batch)
    op.create_table(
        "zq_catalog",
        sa.Column("project", name_type(256), primary_key=True),
        sa.Column("queue", name_type(64), primary_key=True),
        sa.Column("pool", name_type(64), sa.ForeignKey("zq_pools.name"), nullable=False),
        sa.Column("dead_letter_queue", name_type(64), nullable=True),
    )
    op.create_index("zq_catalog_pool", "zq_catalog", ["pool"])
    op.create_index("zq_catalog_dead_letter", "zq_catalog", ["project", "dead_letter_queue"])
    op.execute("INSERT INTO zq_catalog (project, queue, pool, dead_letter_queue) "
               "SELECT project, queue, pool, dead_letter_queue FROM zq_catalog_m0002")
    op.drop_table("zq_catalog_m0002")
