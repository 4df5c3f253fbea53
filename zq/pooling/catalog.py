"""The catalog: which pool each ``(project, queue)`` lives on.

Placement and the dead letter index live here, each in one write
transaction: a queue is registered at most once (the primary key decides a
race between two processes placing it), and the rule that a queue, its
dead letter queue and every queue dead lettering into it share one pool is
checked against the rows the same transaction reads.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import sqlalchemy as sa

from zq.errors import DeadLetterConflict, InvalidRequest
from zq.pooling import placement
from zq.pooling.generation import bump_generation, read_generation
from zq.pooling.placement import Candidate, Requirement
from zq.pooling.schema import catalog, flavors, pools
from zq.storage.sql import dialects
from zq.storage.sql.database import Database


@dataclass(frozen=True, slots=True)
class Location:
    """Where a queue lives: the pool's name and the URI of its backend."""

    pool: str
    uri: str


_LOCATION = sa.select(catalog.c.pool, pools.c.uri).join(pools, pools.c.name == catalog.c.pool)


def _where(project: str, queue: str) -> sa.ColumnElement[bool]:
    return sa.and_(catalog.c.project == project, catalog.c.queue == queue)


def _pool_of(conn: sa.Connection, project: str, queue: str) -> str | None:
    return conn.execute(sa.select(catalog.c.pool).where(_where(project, queue))).scalar()


def _sources(conn: sa.Connection, project: str, target: str) -> list[sa.Row]:
    """The registered queues that dead letter into ``target``, with their pools."""
    return conn.execute(
        sa.select(catalog.c.queue, catalog.c.pool)
        .where(catalog.c.project == project, catalog.c.dead_letter_queue == target)
        .order_by(catalog.c.queue)
    ).all()


def _link(conn: sa.Connection, project: str, queue: str, own: str, target: str | None) -> None:
    """Write ``queue -> target`` for a queue on pool ``own``: the colocation rule's home.

    A queue, its dead letter queue and every queue dead lettering into that
    queue share one pool. A target on (or bound to) another pool is a
    DeadLetterConflict; an unregistered target is registered on ``own``
    here, so a dead letter move, which creates a missing target in its
    source's backend, never finds it missing from the catalog.
    """
    if target is not None:
        target_pool = _pool_of(conn, project, target)
        if target_pool is None:
            row = {"project": project, "queue": target, "pool": own, "dead_letter_queue": None}
            if not dialects.insert_if_absent(conn, catalog, row):
                target_pool = _pool_of(conn, project, target)  # registered meanwhile
        if target_pool is not None and target_pool != own:
            raise placement.colocation_conflict(queue, own, target, target_pool)
        for source in _sources(conn, project, target):
            if source.queue != queue and source.pool != own:
                raise DeadLetterConflict(
                    f"Dead letter queue {target!r} is bound to pool {source.pool!r} "
                    f"(queue {source.queue!r} on it dead letters into it) but queue "
                    f"{queue!r} lives on pool {own!r}; a queue and its dead letter "
                    "queue must share a pool."
                )
    conn.execute(
        sa.update(catalog).where(_where(project, queue)).values(dead_letter_queue=target)
    )


class Catalog:
    """Registrations of queues on pools, read and written in the management store."""

    def __init__(self, db: Database, rng: random.Random | None = None) -> None:
        self._db = db
        self._rng = rng or random.Random()

    def generation(self) -> int:
        """The store's generation (see zq.pooling.generation)."""
        return self._db.read(read_generation)

    def lookup(self, project: str, queue: str) -> Location | None:
        """Where the queue lives; None when it is not registered."""
        query = _LOCATION.where(_where(project, queue))
        row = self._db.read(lambda conn: conn.execute(query).first())
        return None if row is None else Location(row.pool, row.uri)

    def any_pool(self) -> Location | None:
        """The first pool by name (reads of an unregistered queue go there)."""
        query = sa.select(pools.c.name, pools.c.uri).order_by(pools.c.name).limit(1)
        row = self._db.read(lambda conn: conn.execute(query).first())
        return None if row is None else Location(row.name, row.uri)

    def flavor_exists(self, flavor: str) -> bool:
        query = sa.select(flavors.c.name).where(flavors.c.name == flavor)
        return self._db.read(lambda conn: conn.execute(query).first()) is not None

    def place(
        self,
        project: str,
        queue: str,
        *,
        flavor: str | None = None,
        dead_letter_queue: str | None = None,
        beside: str | None = None,
    ) -> Location:
        """Register the queue unless it is; where it lives (see Pools.place).

        ``beside``: a queue whose pool it must share (Pools.place_beside).
        """

        def work(conn: sa.Connection) -> str:
            existing = _pool_of(conn, project, queue)
            if existing is not None:
                return existing
            requirements = self._requirements(conn, project, queue, dead_letter_queue)
            beside_pool = None if beside is None else _pool_of(conn, project, beside)
            if beside_pool is not None:
                requirements.append(Requirement(
                    beside_pool, f"it receives messages from queue {beside!r}, which lives "
                    f"on pool {beside_pool!r}"))
            pool = placement.decide(
                queue, flavor=flavor, candidates=self._candidates(conn, flavor),
                requirements=requirements, rng=self._rng,
            )
            row = {"project": project, "queue": queue, "pool": pool, "dead_letter_queue": None}
            if not dialects.insert_if_absent(conn, catalog, row):
                # Another process registered it between our read and insert.
                return _pool_of(conn, project, queue) or pool
            if dead_letter_queue is not None:
                _link(conn, project, queue, pool, dead_letter_queue)
            return pool

        self._db.write(work)
        location = self.lookup(project, queue)
        assert location is not None  # registered above; pools with queues stay
        return location

    def link_dead_letter(self, project: str, queue: str, target: str | None) -> None:
        """Record the queue's dead letter queue, registered beside it (see ``_link``)."""

        def work(conn: sa.Connection) -> None:
            own = _pool_of(conn, project, queue)
            if own is not None:
                _link(conn, project, queue, own, target)

        self._db.write(work)

    def forget(self, project: str, queue: str) -> None:
        """Unregister a deleted queue; every process drops its cached mapping.

        A queue that others dead letter into stays registered (without a
        link of its own): their next dead letter move recreates it on that
        pool, and the catalog must still say it lives there.
        """

        def work(conn: sa.Connection) -> None:
            if _sources(conn, project, queue):
                conn.execute(sa.update(catalog).where(_where(project, queue))
                             .values(dead_letter_queue=None))
            elif conn.execute(sa.delete(catalog).where(_where(project, queue))).rowcount:
                bump_generation(conn)

        self._db.write(work)

    def list(
        self, project: str, *, marker: str | None, limit: int, name: str | None
    ) -> list[tuple[str, Location]]:
        """Registered queues by name after ``marker``, with where they live."""
        where = [catalog.c.project == project]
        if marker:
            where.append(catalog.c.queue > marker)
        if name:
            where.append(catalog.c.queue.contains(name, autoescape=True))
        query = _LOCATION.add_columns(catalog.c.queue).where(*where).order_by(
            catalog.c.queue
        ).limit(limit)
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [(row.queue, Location(row.pool, row.uri)) for row in rows]

    def count(self, project: str, *, name: str | None) -> int:
        """How many queues ``list`` would return without paging."""
        where = [catalog.c.project == project]
        if name:
            where.append(catalog.c.queue.contains(name, autoescape=True))
        query = sa.select(sa.func.count()).select_from(catalog).where(*where)
        return self._db.read(lambda conn: conn.execute(query).scalar_one())

    # -- placement inputs -----------------------------------------------

    def _candidates(self, conn: sa.Connection, flavor: str | None) -> list[Candidate]:
        if flavor is not None:
            known = conn.execute(sa.select(flavors.c.name).where(flavors.c.name == flavor))
            if known.first() is None:
                raise InvalidRequest(f"_flavor {flavor!r} names no flavor.")
            where = pools.c.flavor == flavor
        else:
            where = pools.c.flavor.is_(None)
        rows = conn.execute(
            sa.select(pools.c.name, pools.c.weight).where(where).order_by(pools.c.name)
        ).all()
        return [Candidate(row.name, row.weight) for row in rows]

    def _requirements(
        self,
        conn: sa.Connection,
        project: str,
        queue: str,
        dead_letter_queue: str | None,
    ) -> list[Requirement]:
        found: list[Requirement] = []
        for source in _sources(conn, project, queue):
            found.append(Requirement(
                source.pool,
                f"queue {source.queue!r}, which dead letters into it, lives on pool "
                f"{source.pool!r}",
            ))
        if dead_letter_queue is not None:
            pool = _pool_of(conn, project, dead_letter_queue)
            if pool is not None:
                found.append(Requirement(
                    pool, f"its dead letter queue {dead_letter_queue!r} lives on pool {pool!r}"
                ))
            for source in _sources(conn, project, dead_letter_queue):
                found.append(Requirement(
                    source.pool,
                    f"its dead letter queue {dead_letter_queue!r} is bound to pool "
                    f"{source.pool!r} (queue {source.queue!r} dead letters into it)",
                ))
        return found
