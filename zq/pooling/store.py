"""Opening the management store: one SQL database with pools, flavors, catalog."""

from __future__ import annotations

import random
from dataclasses import dataclass

from sqlalchemy import exc

from zq.errors import StorageUnavailable
from zq.pooling import migrate
from zq.pooling.catalog import Catalog
from zq.pooling.registry import Registry
from zq.storage.sql import dialects
from zq.storage.sql.database import Database
from zq.storage.uri import redact


@dataclass(frozen=True)
class ManagementStore:
    """The registry of pools and flavors, and the catalog, over one database."""

    registry: Registry
    catalog: Catalog
    db: Database

    def ping(self) -> bool:
        """Whether the management database answers."""
        try:
            self.catalog.generation()
        except Exception:
            return False
        return True

    def close(self) -> None:
        self.db.close()


def open_management(uri: str, *, rng: random.Random | None = None) -> ManagementStore:
    """Connect to the management store; SQLite is migrated, servers must be current."""
    engine = dialects.create_engine(uri)
    try:
        if engine.dialect.name == "sqlite":
            migrate.upgrade_engine(engine)
        else:
            migrate.require_current(engine, uri)
    except exc.DBAPIError as error:
        engine.dispose()
        raise StorageUnavailable(
            "Cannot use the management store.", detail=f"{redact(uri)}: {error.orig}"
        ) from error
    except BaseException:
        engine.dispose()
        raise
    db = Database(engine)
    return ManagementStore(Registry(db), Catalog(db, rng), db)
