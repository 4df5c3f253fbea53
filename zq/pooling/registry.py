"""Pools and flavors in the management store.

A pool is one storage backend (a URI) with a weight, optional driver
options and at most one flavor. A flavor is a named set of pools: its
``pool_list`` is read from the pools that name it, so membership is stored
once. Every rule that protects the catalog is checked inside the write
transaction that would break it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc

from zq.errors import (
    FlavorNotFound,
    InvalidRequest,
    PoolConflict,
    PoolInUseByFlavor,
    PoolNotFound,
    UnableToCreate,
)
from zq.pooling.generation import bump_generation
from zq.pooling.schema import catalog, flavors, pools
from zq.storage.sql.database import Database
from zq.storage.sql.records import dump_json, load_json

# Queues named when a pool cannot be removed because it still holds some.
SHOWN_QUEUES = 3


@dataclass(frozen=True, slots=True)
class PoolDef:
    name: str
    uri: str
    weight: int
    flavor: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FlavorDef:
    name: str
    pool_list: list[str]
    capabilities: dict[str, Any] = field(default_factory=dict)


def _pool(row: sa.Row[Any]) -> PoolDef:
    return PoolDef(row.name, row.uri, row.weight, row.flavor, load_json(row.options) or {})


class Registry:
    """Create, read, change and remove pools and flavors."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- pools ----------------------------------------------------------

    def put_pool(self, pool: PoolDef) -> None:
        """Register a pool, or overwrite the one of that name (Zaqar's PUT).

        PoolConflict when its URI is another pool's, or when it would give a
        pool that holds queues another URI: their messages live at the old
        one (PATCH ``uri`` says explicitly that the backend moved).
        """

        def work(conn: sa.Connection) -> None:
            _check_uri_free(conn, pool.uri, pool.name)
            values = {"uri": pool.uri, "weight": pool.weight, "flavor": pool.flavor,
                      "options": dump_json(pool.options)}
            row = _pool_row(conn, pool.name)
            if row is None:
                conn.execute(sa.insert(pools).values(name=pool.name, **values))
                return
            if row.uri != pool.uri:
                held = _held_queues(conn, pool.name)
                if held:
                    raise PoolConflict(
                        f"Pool {pool.name!r} holds {held}; a PUT cannot give it another "
                        "URI. If its backend really moved with its data, PATCH the uri."
                    )
                bump_generation(conn)
            conn.execute(sa.update(pools).where(pools.c.name == pool.name).values(**values))

        self._write(work, f"Pool {pool.name!r} or its URI is already registered.")

    def get_pool(self, name: str) -> PoolDef:
        """One pool; raises PoolNotFound."""
        row = self._db.read(lambda conn: _pool_row(conn, name))
        if row is None:
            raise PoolNotFound(f"Pool {name!r} does not exist.")
        return _pool(row)

    def update_pool(self, name: str, changes: Mapping[str, Any]) -> PoolDef:
        """Change some of ``uri``, ``weight``, ``flavor``, ``options``; the new pool."""

        def work(conn: sa.Connection) -> PoolDef:
            row = _pool_row(conn, name)
            if row is None:
                raise PoolNotFound(f"Pool {name!r} does not exist.")
            values = {k: v for k, v in changes.items() if k in ("uri", "weight", "flavor")}
            if "options" in changes:
                values["options"] = dump_json(changes["options"])
            if "uri" in changes and changes["uri"] != row.uri:
                _check_uri_free(conn, changes["uri"], name)
                # Processes holding a connection to the old URI must drop it.
                bump_generation(conn)
            if values:
                conn.execute(sa.update(pools).where(pools.c.name == name).values(**values))
            return _pool(_pool_row(conn, name))

        return self._write(work, "The pool's new URI is already registered.")

    def remove_pool(self, name: str) -> None:
        """Deregister a pool; no error when absent.

        PoolInUseByFlavor (403) while it is its flavor's only pool,
        PoolConflict (409) while queues live on it.
        """

        def work(conn: sa.Connection) -> None:
            row = _pool_row(conn, name)
            if row is None:
                return
            if row.flavor is not None and _flavor_pools(conn, row.flavor) == [name]:
                # As Zaqar: a flavor keeps at least one pool; a pool among
                # others just leaves its flavor's pool_list.
                raise PoolInUseByFlavor(
                    f"Pool {name!r} is the only pool of flavor {row.flavor!r}; add another "
                    f"pool to it or delete the flavor (/v2/flavors/{row.flavor}) first."
                )
            held = _held_queues(conn, name)
            if held:
                raise PoolConflict(
                    f"Pool {name!r} still holds {held}; delete them before removing the pool."
                )
            conn.execute(sa.delete(pools).where(pools.c.name == name))
            bump_generation(conn)

        self._write(work, f"Pool {name!r} is still in use.")

    def list_pools(self, *, marker: str | None = None, limit: int | None = None) -> list[PoolDef]:
        """Pools by name after ``marker`` (all of them without ``limit``)."""
        query = sa.select(pools).order_by(pools.c.name)
        if marker:
            query = query.where(pools.c.name > marker)
        if limit is not None:
            query = query.limit(limit)
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [_pool(row) for row in rows]

    # -- flavors --------------------------------------------------------

    def put_flavor(self, flavor: FlavorDef) -> None:
        """Create a flavor, or overwrite the one of that name (Zaqar's PUT).

        Its pools must exist and belong to no other flavor; pools left out
        of an overwritten ``pool_list`` leave the flavor.
        """

        def work(conn: sa.Connection) -> None:
            capabilities = dump_json(flavor.capabilities)
            if _flavor_row(conn, flavor.name) is None:
                conn.execute(sa.insert(flavors).values(name=flavor.name,
                                                       capabilities=capabilities))
            else:
                conn.execute(sa.update(flavors).where(flavors.c.name == flavor.name)
                             .values(capabilities=capabilities))
            _set_members(conn, flavor.name, flavor.pool_list, creating=True)

        self._write(work, f"Flavor {flavor.name!r} could not be written.")

    def get_flavor(self, name: str) -> FlavorDef:
        """One flavor with its pool list; raises FlavorNotFound."""
        found = self._db.read(lambda conn: _flavor(conn, name))
        if found is None:
            raise FlavorNotFound(f"Flavor {name!r} does not exist.")
        return found

    def update_flavor(self, name: str, changes: Mapping[str, Any]) -> FlavorDef:
        """Change ``pool_list`` and/or ``capabilities``; the new flavor.

        Pools left out of a new ``pool_list`` leave the flavor (their queues
        stay where they are).
        """

        def work(conn: sa.Connection) -> FlavorDef:
            if _flavor_row(conn, name) is None:
                raise FlavorNotFound(f"Flavor {name!r} does not exist.")
            if "capabilities" in changes:
                conn.execute(sa.update(flavors).where(flavors.c.name == name).values(
                    capabilities=dump_json(changes["capabilities"])
                ))
            if "pool_list" in changes:
                _set_members(conn, name, changes["pool_list"], creating=False)
            found = _flavor(conn, name)
            assert found is not None
            return found

        return self._write(work, f"Flavor {name!r} could not be changed.")

    def remove_flavor(self, name: str) -> None:
        """Delete a flavor (its pools become flavor-less); no error when absent."""

        def work(conn: sa.Connection) -> None:
            conn.execute(sa.update(pools).where(pools.c.flavor == name).values(flavor=None))
            conn.execute(sa.delete(flavors).where(flavors.c.name == name))

        self._write(work, f"Flavor {name!r} could not be removed.")

    def list_flavors(
        self, *, marker: str | None = None, limit: int | None = None
    ) -> list[FlavorDef]:
        """Flavors by name after ``marker``, each with its pool list."""

        def work(conn: sa.Connection) -> list[FlavorDef]:
            query = sa.select(flavors.c.name).order_by(flavors.c.name)
            if marker:
                query = query.where(flavors.c.name > marker)
            if limit is not None:
                query = query.limit(limit)
            names = conn.execute(query).scalars().all()
            return [f for f in (_flavor(conn, n) for n in names) if f is not None]

        return self._db.read(work)

    def flavor_exists(self, name: str) -> bool:
        """Whether a flavor of that name exists."""
        return self._db.read(lambda conn: _flavor_row(conn, name)) is not None

    # -- helpers --------------------------------------------------------

    def _write(self, work: Any, race: str) -> Any:
        # The checks run in the transaction; a unique key still catches a
        # concurrent writer that slipped between check and insert.
        try:
            return self._db.write(work)
        except exc.IntegrityError as error:
            raise PoolConflict(race) from error


def _pool_row(conn: sa.Connection, name: str) -> sa.Row[Any] | None:
    return conn.execute(sa.select(pools).where(pools.c.name == name)).first()


def _flavor_row(conn: sa.Connection, name: str) -> sa.Row[Any] | None:
    return conn.execute(sa.select(flavors).where(flavors.c.name == name)).first()


def _flavor(conn: sa.Connection, name: str) -> FlavorDef | None:
    row = _flavor_row(conn, name)
    if row is None:
        return None
    return FlavorDef(name, _flavor_pools(conn, name), load_json(row.capabilities) or {})


def _flavor_pools(conn: sa.Connection, flavor: str) -> list[str]:
    return list(conn.execute(
        sa.select(pools.c.name).where(pools.c.flavor == flavor).order_by(pools.c.name)
    ).scalars().all())


def _held_queues(conn: sa.Connection, pool: str) -> str:
    """'' when no queue lives on ``pool``, else how many and a few of them."""
    held = conn.execute(
        sa.select(sa.func.count()).select_from(catalog).where(catalog.c.pool == pool)
    ).scalar_one()
    if not held:
        return ""
    some = conn.execute(
        sa.select(catalog.c.project, catalog.c.queue)
        .where(catalog.c.pool == pool)
        .order_by(catalog.c.project, catalog.c.queue)
        .limit(SHOWN_QUEUES)
    ).all()
    shown = ", ".join(f"{r.queue!r} (project {r.project!r})" for r in some)
    return f"{held} queue(s), for example {shown}"


def _check_uri_free(conn: sa.Connection, uri: str, name: str) -> None:
    owner = conn.execute(sa.select(pools.c.name).where(pools.c.uri == uri)).scalar()
    if owner is not None and owner != name:
        raise PoolConflict(f"URI {uri!r} is already registered as pool {owner!r}.")


def _set_members(
    conn: sa.Connection, flavor: str, pool_list: Sequence[str], *, creating: bool
) -> None:
    """Make exactly ``pool_list`` the pools of ``flavor`` (``creating``: its PUT)."""
    for name in pool_list:
        row = _pool_row(conn, name)
        if row is None:
            if creating:  # Zaqar's title for this refusal of a PUT
                raise UnableToCreate(
                    f"Flavor {flavor!r} could not be created: pool {name!r} in "
                    "pool_list does not exist."
                )
            raise InvalidRequest(f"Pool {name!r} in pool_list does not exist.")
        if row.flavor is not None and row.flavor != flavor:
            raise PoolConflict(
                f"Pool {name!r} already belongs to flavor {row.flavor!r}; a pool is in "
                "at most one flavor."
            )
    conn.execute(
        sa.update(pools)
        .where(pools.c.flavor == flavor, pools.c.name.not_in(list(pool_list)))
        .values(flavor=None)
    )
    conn.execute(
        sa.update(pools).where(pools.c.name.in_(list(pool_list))).values(flavor=flavor)
    )
