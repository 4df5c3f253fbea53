"""URIs as users write them, connection set-up, unreachable servers."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from zq.clock import ManualClock
from zq.errors import InvalidRequest, StorageUnavailable
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
    # libpq's host list becomes SQLAlchemy's repeated host= options.
    ("postgresql://u:pw@h1:5432,h2:5433/zq?target_session_attrs=read-write",
     "postgresql+psycopg://u:pw@/zq?host=h1%3A5432&host=h2%3A5433"
     "&target_session_attrs=read-write"),
    ("postgres://u@h1,h2:5433/zq", "postgresql+psycopg://u@/zq?host=h1&host=h2%3A5433"),
    ("postgresql://h1:1,h2:2", "postgresql+psycopg:///?host=h1%3A1&host=h2%3A2"),
])
def test_uris_map_to_the_drivers_zq_uses(uri, expected):
    url = dialects.to_sqlalchemy_url(uri)
    assert url.render_as_string(hide_password=False) == expected


def test_every_host_of_a_list_reaches_libpq_in_order():
    uri = "postgresql://u@h1:5432,h2,h3:5434/zq?target_session_attrs=read-write"
    engine = dialects.create_engine(uri)
    try:
        _, options = engine.dialect.create_connect_args(engine.url)
    finally:
        engine.dispose()
    assert (options["host"], options["port"]) == ("h1,h2,h3", "5432,,5434")
    assert options["target_session_attrs"] == "read-write"
    # A host that neither answers nor refuses cannot hold a request for minutes.
    assert options["connect_timeout"] == str(dialects.PG_CONNECT_TIMEOUT)


def test_a_connect_timeout_in_the_uri_is_kept():
    engine = dialects.create_engine("postgresql://u@h1/zq?connect_timeout=2")
    try:
        _, options = engine.dialect.create_connect_args(engine.url)
    finally:
        engine.dispose()
    assert options["connect_timeout"] == "2"


@pytest.mark.parametrize(("uri", "fragment"), [
    ("postgresql://u:s3cret@[::1]:5432,h2/zq", "every entry must be host or host:port"),
    ("postgresql://u:s3cret@h1,,h2/zq", "every entry must be host or host:port"),
    ("postgresql://u:s3cret@h1,h2/zq?host=h3", "not both"),
])
def test_a_host_list_zq_cannot_pass_on_is_refused_clearly(uri, fragment):
    with pytest.raises(InvalidRequest, match=fragment) as refused:
        dialects.create_engine(uri)
    assert "s3cret" not in str(refused.value)


def test_a_host_list_connects_to_the_host_that_answers(tmp_path):
    """The first host is down: libpq goes on to the next; `zq db upgrade` keeps the list."""
    from tests.backends import empty_database
    from zq import cli

    with empty_database("postgresql") as single:
        url = dialects.to_sqlalchemy_url(single)
        listed = (f"postgresql://{url.username}@127.0.0.1:1,{url.host}:{url.port or 5432}"
                  f"/{url.database}?target_session_attrs=read-write")
        assert cli.main(["db", "upgrade", "--storage", listed]) == 0
        storage = open_storage(listed, clock=ManualClock())
        try:
            storage.queues.create("p", "q", {})
            assert storage.queues.exists("p", "q")
        finally:
            storage.close()


def test_a_connection_to_a_read_only_server_is_dropped_and_503(sql_storage):
    """After a failover a pooled connection may reach the old primary, now read-only.

    The write answers StorageUnavailable (a 503), and the pool drops its
    connections, so the next request connects anew and succeeds.
    """
    if sql_storage.engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL's read-only state (SQLSTATE 25006)")
    sql_storage.queues.create("p", "q", {})
    engine = sql_storage.engine
    # Every connection the pool holds now acts as a standby's would.
    held = [engine.raw_connection() for _ in range(2)]
    for raw in held:
        cursor = raw.cursor()
        cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        cursor.close()
        raw.commit()
    for raw in held:
        raw.close()
    with pytest.raises(StorageUnavailable):
        sql_storage.queues.create("p", "r", {})
    sql_storage.queues.create("p", "r", {})
    assert sql_storage.queues.exists("p", "r")


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
