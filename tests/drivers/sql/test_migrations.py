"""Alembic migrations and the schema check at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from tests.contract.helpers import new_message
from zq.clock import ManualClock
from zq.errors import StorageUnavailable
from zq.storage.sql import dialects, migrate, open_sql
from zq.storage.sql.schema import POSTGRESQL_ONLY_COLUMNS, POSTGRESQL_ONLY_INDEXES, metadata
from zq.storage.uri import redact


def test_migrations_are_found_in_the_source_checkout():
    found = migrate.migrations_dir()
    assert found == Path(__file__).resolve().parents[3] / "migrations"
    assert (found / "versions").is_dir()


# SQLAlchemy has no type for PostgreSQL's xid8 (events.xid, PostgreSQL only).
@pytest.mark.filterwarnings("ignore:Did not recognize type 'xid8'")
def test_upgrade_creates_the_schema_the_driver_declares(empty_uri):
    assert migrate.current_revision(empty_uri) is None
    migrate.upgrade(empty_uri)
    assert migrate.current_revision(empty_uri) == migrate.head_revision()
    engine = dialects.create_engine(empty_uri)
    try:
        with engine.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn), metadata)
            dialect = conn.dialect.name
    finally:
        engine.dispose()
    extra = [d for d in differences if _postgresql_only(d)]
    assert [d for d in differences if d not in extra] == []
    if dialect == "postgresql":
        assert len(extra) == len(POSTGRESQL_ONLY_COLUMNS) + len(POSTGRESQL_ONLY_INDEXES)
    else:
        assert extra == []
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
    # The command as the user would type it: their URI (redacted), not
    # SQLAlchemy's postgresql+psycopg:// form, and not a bare `zq db
    # upgrade`, which migrates the default SQLite file.
    given = empty_uri.replace("+psycopg", "").replace("mysql+pymysql", "mysql")
    with pytest.raises(StorageUnavailable) as refused:
        open_sql(given, clock=ManualClock())
    assert f"`zq db upgrade --storage {redact(given)}`" in str(refused.value)
    assert "+psycopg" not in str(refused.value) and "+pymysql" not in str(refused.value)
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


def _postgresql_only(difference: tuple) -> bool:
    """An object migrations create on PostgreSQL only, outside the shared metadata."""
    if difference[0] == "remove_column":
        return (difference[2], difference[3].name) in POSTGRESQL_ONLY_COLUMNS
    if difference[0] == "remove_index":
        return difference[1].name in POSTGRESQL_ONLY_INDEXES
    return False


def test_postgresql_events_written_before_0004_keep_their_place(empty_uri):
    """Rows from before the xid column sort first, in seq order; a bare seq cursor still works."""
    if not empty_uri.startswith("postgresql"):
        pytest.skip("migration 0004 changes PostgreSQL only")
    migrate.upgrade(empty_uri, "0003")
    engine = dialects.create_engine(empty_uri)
    try:
        with engine.begin() as conn:
            for n in range(3):
                conn.exec_driver_sql(
                    "INSERT INTO events (time, project, queue, kind, detail) "
                    f"VALUES ({n}, 'p', 'q', 'posted', '{{}}')")
    finally:
        engine.dispose()
    migrate.upgrade(empty_uri)
    storage = open_sql(empty_uri, clock=ManualClock())
    try:
        storage.messages.post("p", "q", [new_message()], client_id=None)
        everything = storage.events.read()
        assert [e.time for e in everything[:3]] == [0, 1, 2]
        assert len(everything) == 4
        # A dataset exported before 0004 holds cursor "1" (a bare seq).
        assert [e.time for e in storage.events.read(after="1")][:2] == [1, 2]
        assert storage.events.count(after="1") == 3
    finally:
        storage.close()


def test_the_upgrade_command_names_the_uri_with_its_password_masked():
    assert migrate.STORAGE.upgrade_command("postgresql://zq:s3cret@db/zq") == (
        "zq db upgrade --storage postgresql://zq:***@db/zq")
    from zq.pooling.migrate import MANAGEMENT

    assert MANAGEMENT.upgrade_command("mysql://root@db/m") == (
        "zq db upgrade --management mysql://root@db/m")
