"""Management store migrations keep pools, flavors and the catalog."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from alembic import command

from tests.backends import empty_database, selected_backends
from zq.pooling import migrate
from zq.pooling.registry import PoolDef, Registry
from zq.storage.sql import dialects
from zq.storage.sql.database import Database

KINDS = [k for k in ("sqlite", "postgresql", "mariadb") if k in selected_backends()]


@pytest.fixture(params=KINDS)
def uri(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'management.sqlite3'}"
        return
    with empty_database(request.param) as found:
        yield found


def test_m0002_frees_the_pool_flavor_and_keeps_the_data(uri: str) -> None:
    engine = dialects.create_engine(uri)
    try:
        config = migrate.MANAGEMENT._config()
        writer = engine.execution_options(**{dialects.WRITE_OPTION: True})
        with writer.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "m0001")
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO zq_flavors VALUES ('fast', '{}')"))
            conn.execute(sa.text(
                "INSERT INTO zq_pools VALUES ('one', 'sqlite:///one', 5, 'fast', '{}')"))
            conn.execute(sa.text("INSERT INTO zq_catalog VALUES ('p', 'q', 'one', NULL)"))
        migrate.upgrade_engine(engine)
        assert migrate.MANAGEMENT.revision(engine) == migrate.head_revision() == "m0002"
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT pool FROM zq_catalog")).scalar_one() == "one"
        registry = Registry(Database(engine))
        assert registry.get_pool("one") == PoolDef("one", "sqlite:///one", 5, "fast", {})
        assert registry.get_flavor("fast").pool_list == ["one"]
        registry.put_pool(PoolDef("two", "sqlite:///two", 1, "not-yet"))
        assert registry.get_pool("two").flavor == "not-yet"
        # The catalog still refuses a queue on a pool that does not exist.
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO zq_catalog VALUES ('p', 'r', 'ghost', NULL)"))
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO zq_pools VALUES ('three', 'sqlite:///one', 1, NULL, '{}')"))
    finally:
        engine.dispose()
