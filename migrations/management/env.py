"""Alembic environment for zq's management store (pools, flavors, catalog).

Its revisions are recorded in ``zq_management_version``, not in
``alembic_version``, so the store can share a database with a storage pool.
zq.pooling.migrate passes an open connection in
``config.attributes["connection"]``.
"""

from __future__ import annotations

from alembic import context

from zq.pooling.schema import metadata
from zq.storage.sql import dialects

VERSION_TABLE = "zq_management_version"

config = context.config


def run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection, target_metadata=metadata, version_table=VERSION_TABLE
    )
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run(connection)
        return
    engine = dialects.create_engine(config.get_main_option("sqlalchemy.url") or "")
    try:
        with engine.begin() as conn:
            run(conn)
    finally:
        engine.dispose()


main()
