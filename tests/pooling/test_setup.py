"""Turning pooling on: configuration, the management schema, create_app's resolver."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from zq.config import ConfigError, load_config
from zq.pooling import migrate
from zq.pooling.resolver import CatalogPools
from zq.pooling.setup import open_pools
from zq.pooling.single import SingleBackend
from zq.storage.sql import migrate as storage_migrate


def test_pooling_is_off_by_default():
    config = load_config(environ={})
    assert config.pooling.enabled is False
    assert config.pooling.resolved_management().endswith("zq-management.sqlite3")


def test_pooling_from_the_config_file(tmp_path):
    path = tmp_path / "zq.toml"
    path.write_text('[pooling]\nenabled = true\nmanagement = "sqlite:///m.db"\n')
    config = load_config(path, environ={})
    assert config.pooling.enabled is True
    assert config.pooling.resolved_management() == "sqlite:///m.db"


@pytest.mark.parametrize("text,expected", [("true", True), ("0", False), ("Yes", True)])
def test_pooling_from_the_environment(text, expected):
    config = load_config(environ={"ZQ_POOLING_ENABLED": text})
    assert config.pooling.enabled is expected


def test_pooling_enabled_must_be_a_boolean(tmp_path):
    path = tmp_path / "zq.toml"
    path.write_text("[pooling]\nenabled = 3\n")
    with pytest.raises(ConfigError, match=r"pooling\.enabled"):
        load_config(path, environ={})
    with pytest.raises(ConfigError, match="true or false"):
        load_config(environ={"ZQ_POOLING_ENABLED": "maybe"})


def test_open_pools_follows_the_config(pooling_config, clock, tmp_path):
    pools, admin = open_pools(pooling_config, clock=clock)
    assert isinstance(pools, CatalogPools) and admin is not None
    pools.close()
    plain = pooling_config.with_overrides(
        pooling={"enabled": False}, storage={"uri": f"sqlite:///{tmp_path}/s.sqlite3"}
    )
    pools, admin = open_pools(plain, clock=clock)
    assert isinstance(pools, SingleBackend) and admin is None
    pools.close()


def test_management_and_storage_schemas_share_a_database(tmp_path):
    uri = f"sqlite:///{tmp_path}/both.sqlite3"
    storage_migrate.upgrade(uri)
    assert migrate.current_revision(uri) is None
    migrate.upgrade_management(uri)
    migrate.upgrade_management(uri)  # again: nothing to do
    assert migrate.current_revision(uri) == migrate.head_revision()
    assert storage_migrate.current_revision(uri) == storage_migrate.head_revision()
    engine = sa.create_engine(uri.replace("sqlite:", "sqlite+pysqlite:"))
    with engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
    engine.dispose()
    assert {"alembic_version", "zq_management_version", "zq_pools", "zq_catalog",
            "queues"} <= tables


@pytest.fixture
def postgres_database():
    """A fresh PostgreSQL database, dropped afterwards."""
    import secrets

    admin = sa.create_engine("postgresql+psycopg://postgres@127.0.0.1:5432/test",
                             isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    name = f"zq_test_mgmt_{secrets.token_hex(6)}"
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.dispose()


def test_management_store_on_postgresql_needs_an_upgrade_first(postgres_database):
    from zq.errors import StorageUnavailable
    from zq.pooling.store import open_management

    with pytest.raises(StorageUnavailable, match="zq db upgrade --management"):
        open_management(postgres_database)
    migrate.upgrade_management(postgres_database)
    store = open_management(postgres_database)
    try:
        assert store.catalog.generation() == 0
    finally:
        store.close()


def test_management_store_named_by_a_host_list_keeps_every_host(postgres_database, capsys):
    """`zq db upgrade --management` and the store itself on libpq's host list form.

    The first host refuses; libpq goes on to the second, which is the
    primary. Before host lists were passed on, both failed in int().
    """
    from zq import cli
    from zq.pooling.store import open_management

    listed = postgres_database.replace(
        "@127.0.0.1:5432/", "@127.0.0.1:1,127.0.0.1:5432/") + "?target_session_attrs=read-write"
    assert cli.main(["db", "upgrade", "--management", listed]) == 0
    assert "127.0.0.1:1,127.0.0.1:5432" in capsys.readouterr().out
    store = open_management(listed)
    try:
        assert store.catalog.generation() == 0
    finally:
        store.close()
