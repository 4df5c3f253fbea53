"""Alembic migrations and the schema check at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from zq.clock import ManualClock
from zq.errors import StorageUnavailable
from zq.storage.sql import dialects, migrate, open_sql
from zq.storage.sql.schema import metadata


def test_migrations_are_found_in_the_source_checkout():
    found = migrate.migrations_dir()
    assert found == Path(__file__).resolve().parents[3] / "migrations"
    assert (found / "versions").is_dir()


def test_upgrade_creates_the_schema_the_driver_declares(empty_uri):
    assert migrate.current_revision(empty_uri) is None
    migrate.upgrade(empty_uri)
    assert migrate.current_revision(empty_uri) == migrate.head_revision()
    engine = dialects.create_engine(empty_uri)
    try:
        with engine.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn), metadata)
    finally:
        engine.dispose()
    assert differences == []
    migrate.upgrade(empty_uri)  # a second upgrade is a no-op
    assert migrate.current_revision(empty_uri) == migrate.head_revision()


def test_open_without_schema(empty_uri):
    """SQLite migrates itself; a server asks the operator to run `zq db upgrade`."""
    if empty_uri.startswith("sqlite"):
        storage = open_sql(empty_uri, clock=ManualClock())
        try:
            assert storage.ping()
            assert migrate.current_revision(empty_uri) == migrate.head_revision()
        finally:
            storage.close()
        return
    with pytest.raises(StorageUnavailable, match="zq db upgrade"):
        open_sql(empty_uri, clock=ManualClock())
    migrate.upgrade(empty_uri)
    storage = open_sql(empty_uri, clock=ManualClock())
    storage.close()


def test_open_with_an_unknown_revision_asks_for_a_newer_zq(empty_uri):
    migrate.upgrade(empty_uri)
    engine = dialects.create_engine(empty_uri)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'f00'")
    finally:
        engine.dispose()
    with pytest.raises(StorageUnavailable, match="upgrade zq"):
        open_sql(empty_uri, clock=ManualClock())


def test_postgresql_queue_tables_vacuum_after_a_fixed_number_of_dead_rows(empty_uri):
    """Migration 0002 sets queue-churn autovacuum parameters on PostgreSQL only."""
    migrate.upgrade(empty_uri)
    engine = dialects.create_engine(empty_uri)
    try:
        with engine.connect() as conn:
            if conn.dialect.name != "postgresql":
                # Nothing to set elsewhere, and the upgrade still succeeded.
                assert migrate.current_revision(empty_uri) == migrate.head_revision()
                return
            options = dict(conn.exec_driver_sql(
                "SELECT relname, reloptions FROM pg_class "
                "WHERE relname IN ('messages', 'claims', 'events', 'queues') "
                "AND relnamespace = 'public'::regnamespace"
            ).all())
    finally:
        engine.dispose()
    for table in ("messages", "claims", "events"):
        assert "autovacuum_vacuum_scale_factor=0" in options[table]
        assert "autovacuum_vacuum_cost_delay=0" in options[table]
    assert "autovacuum_vacuum_threshold=5000" in options["messages"]
    assert options["queues"] is None
