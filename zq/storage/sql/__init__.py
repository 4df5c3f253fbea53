"""The SQL storage driver: SQLite, PostgreSQL, MariaDB/MySQL."""

from zq.storage.sql.storage import SqlStorage, open_sql

__all__ = ["SqlStorage", "open_sql"]
