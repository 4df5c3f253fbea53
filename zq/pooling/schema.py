"""The management store's tables (SQLAlchemy Core).

``migrations/management/`` creates them, with its own Alembic version table
(``zq_management_version``), so a management store may share a database
with a storage pool without either schema seeing the other's revisions.

- ``zq_pools``: one row per pool (a storage backend). ``flavor`` is the one
  flavor the pool belongs to, as in Zaqar v2, so a flavor's ``pool_list``
  is derived, never stored twice.
- ``zq_flavors``: flavor names and their capabilities.
- ``zq_catalog``: where each queue lives, and the queue it dead letters
  into (the index that keeps a dead letter queue on its sources' pool).
- ``zq_management_state``: one row; ``generation`` grows whenever a mapping
  some process may have cached stops being true (a queue unregistered, a
  pool removed or pointed at another URI).
"""

from __future__ import annotations

import sqlalchemy as sa

from zq.storage.sql.schema import PROJECT, QUEUE, long_text, name_type

metadata = sa.MetaData()

NAME = 64
URI = 512
STATE_ROW = 1

flavors = sa.Table(
    "zq_flavors",
    metadata,
    sa.Column("name", name_type(NAME), primary_key=True),
    sa.Column("capabilities", long_text(), nullable=False),
)

pools = sa.Table(
    "zq_pools",
    metadata,
    sa.Column("name", name_type(NAME), primary_key=True),
    sa.Column("uri", name_type(URI), nullable=False, unique=True),
    sa.Column("weight", sa.Integer(), nullable=False),
    # No foreign key: a pool may name a flavor before it exists (migration m0002).
    sa.Column("flavor", name_type(NAME), nullable=True),
    sa.Column("options", long_text(), nullable=False),
)

catalog = sa.Table(
    "zq_catalog",
    metadata,
    sa.Column("project", name_type(PROJECT), primary_key=True),
    sa.Column("queue", name_type(QUEUE), primary_key=True),
    sa.Column("pool", name_type(NAME), sa.ForeignKey("zq_pools.name"), nullable=False),
    sa.Column("dead_letter_queue", name_type(QUEUE), nullable=True),
    sa.Index("zq_catalog_pool", "pool"),
    sa.Index("zq_catalog_dead_letter", "project", "dead_letter_queue"),
)

state = sa.Table(
    "zq_management_state",
    metadata,
    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("generation", sa.BigInteger(), nullable=False),
)
