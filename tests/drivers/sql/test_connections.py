"""URIs as users write them, connection set-up, unreachable servers."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from zq.clock import ManualClock
from zq.errors import StorageUnavailable
from zq.storage import open_storage
from zq.storage.sql import SqlStorage, dialects, open_sql


@pytest.mark.parametrize(("uri", "expected"), [
    ("postgresql://u@h/db", "postgresql+psycopg://u@h/db"),
    ("postgres://u:pw@h:5433/db", "postgresql+psycopg://u:pw@h:5433/db"),
    ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
    ("mysql://root@h/db", "mysql+pymysql://root@h/db?charset=utf8mb4"),
    ("mariadb://root@h/db", "mysql+pymysql://root@h/db?charset=utf8mb4"),
    ("mysql+pymysql://root@h/db?charset=latin1", "mysql+pymysql://root@h/db?charset=latin1"),
    ("sqlite:////var/lib/zq/zq.db", "sqlite:////var/lib/zq/zq.db"),
])
def test_uris_map_to_the_drivers_zq_uses(uri, expected):
    url = dialects.to_sqlalchemy_url(uri)
    assert url.render_as_string(hide_password=False) == expected


def test_sqlite_is_set_up_for_concurrent_workers(tmp_path):
    uri = f"sqlite:///{tmp_path}/zq.db"
    storage = open_storage(uri, clock=ManualClock())
    try:
        assert isinstance(storage, SqlStorage)
        assert (tmp_path / "zq.db").is_file()
        with storage.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
    finally:
        storage.close()


@pytest.mark.parametrize("uri", [
    "postgresql://postgres@127.0.0.1:1/nowhere",
    "mysql://root@127.0.0.1:1/nowhere",
])
def test_unreachable_server_is_storage_unavailable(uri):
    with pytest.raises(StorageUnavailable, match=r"127\.0\.0\.1"):
        open_sql(uri, clock=ManualClock())


def test_lost_backend_is_storage_unavailable_and_ping_false(tmp_path):
    uri = f"sqlite:///{tmp_path}/zq.db"
    storage = open_sql(uri, clock=ManualClock())
    try:
        # Replace the engine with one pointing at a file that cannot exist.
        storage._db.engine = sa.create_engine(f"sqlite:///{tmp_path}/missing/dir/x.db")
        assert storage.ping() is False
        with pytest.raises(StorageUnavailable):
            storage.queues.count("p")
    finally:
        storage.close()
