"""Alembic environment for zq's SQL storage schema.

zq.storage.sql.migrate passes an open connection in
``config.attributes["connection"]``. Run by hand (``alembic -c ...``), the
database comes from ``sqlalchemy.url`` in the ini file.
"""

from __future__ import annotations

from alembic import context

from zq.storage.sql import dialects
from zq.storage.sql.schema import metadata

config = context.config


def run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(connection=connection, target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()


def main() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run(connection)
        return
    if context.is_offline_mode():
        context.configure(url=config.get_main_option("sqlalchemy.url"),
                          target_metadata=metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = dialects.create_engine(config.get_main_option("sqlalchemy.url") or "")
    try:
        with engine.begin() as conn:
            run(conn)
    finally:
        engine.dispose()


main()
