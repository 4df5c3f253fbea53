"""The breaker on SQL: the ``breakers`` and ``breaker_outcomes`` tables.

``BreakerStep`` is the breaker's part of one reject, delete, claim or pop
transaction (zq.storage.breakers lists the state machine); ``SqlBreakers``
is Storage.breakers. A step that may change the state locks the queue's
breaker row first (FOR UPDATE; SQLite's write transaction already excludes
other writers), so two workers never both trip or close it. A success on a
closed breaker only appends its outcome: the deletes of a healthy queue do
not queue up behind one row.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa

from zq import events
from zq.clock import Clock
from zq.poison import breaker as rules
from zq.poison.breaker import BreakerPolicy
from zq.storage.breakers import BreakerLog, BreakerState, initial_state
from zq.storage.sql import dialects
from zq.storage.sql.database import Database
from zq.storage.sql.events import event_row, record
from zq.storage.sql.schema import breaker_outcomes as o
from zq.storage.sql.schema import breakers as b
from zq.storage.sql.schema import messages as m
from zq.storage.sql.schema import queues


@dataclass
class _Row:
    """The breaker row, as a step changes it before writing it back."""

    state: str = rules.CLOSED
    since: float = 0.0
    description: str | None = None
    tripped_at: float | None = None
    closed_at: float | None = None
    redrive_due: bool = False
    next_probe: float | None = None
    probe_claim_id: str | None = None
    probe_successes: int = 0

    @classmethod
    def of(cls, row: sa.Row[Any]) -> _Row:
        return cls(state=row.state, since=row.since, description=row.description,
                   tripped_at=row.tripped_at, closed_at=row.closed_at,
                   redrive_due=bool(row.redrive_due), next_probe=row.next_probe,
                   probe_claim_id=row.probe_claim_id, probe_successes=row.probe_successes)

    def values(self) -> dict[str, Any]:
        return {"state": self.state, "since": self.since, "description": self.description,
                "tripped_at": self.tripped_at, "closed_at": self.closed_at,
                "redrive_due": self.redrive_due, "next_probe": self.next_probe,
                "probe_claim_id": self.probe_claim_id,
                "probe_successes": self.probe_successes}

    def outage_at(self, time: float) -> bool:
        """Whether the breaker was open (or half-open) at ``time``."""
        if self.tripped_at is None or time < self.tripped_at:
            return False
        if self.state != rules.CLOSED:
            return True
        return self.closed_at is not None and time < self.closed_at


def _mine(table: sa.Table, project: str, queue: str) -> sa.ColumnElement[bool]:
    return sa.and_(table.c.project == project, table.c.queue == queue)


class BreakerStep:
    """The breaker's part of one transaction on ``queue`` (events in ``events``)."""

    def __init__(self, conn: sa.Connection, project: str, queue: str, policy: BreakerPolicy,
                 now: float) -> None:
        self.conn, self.project, self.queue = conn, project, queue
        self.policy, self.now = policy, now
        self.events: list[dict[str, Any]] = []
        self._row: _Row | None = None  # read
        self._locked = False
        self._trimmed = False
        # A failed probe's message is held back until then (probe_hold);
        # the reject applies it to the delay it gives the message.
        self.held_until: float | None = None
        self.lapsed_probe: str | None = None  # the lapsed probe claim allowance found

    # -- reading and writing the row ---------------------------------------

    def _read(self) -> _Row:
        if self._row is None:
            found = self.conn.execute(
                sa.select(b).where(_mine(b, self.project, self.queue))).first()
            self._row = _Row() if found is None else _Row.of(found)
        return self._row

    def _lock(self) -> _Row:
        """The row, locked for the rest of the transaction (created if missing)."""
        if not self._locked:
            query = sa.select(b).where(_mine(b, self.project, self.queue)).with_for_update()
            found = self.conn.execute(query).first()
            if found is None:
                dialects.insert_if_absent(self.conn, b, {
                    "project": self.project, "queue": self.queue,
                    **_Row(since=self._created()).values()})
                found = self.conn.execute(query).one()
            self._row = _Row.of(found)
            self._locked = True
        assert self._row is not None
        return self._row

    def _created(self) -> float:
        created = self.conn.execute(sa.select(queues.c.created).where(
            queues.c.project == self.project, queues.c.name == self.queue)).scalar()
        return float(created or 0.0)

    def _save(self) -> None:
        assert self._row is not None and self._locked
        self.conn.execute(sa.update(b).where(_mine(b, self.project, self.queue))
                          .values(self._row.values()))

    @property
    def state(self) -> str:
        """The state as last read (a read without lock, enough to skip work)."""
        return self._read().state

    def locked_state(self) -> str:
        """The state, with the row locked for the rest of the transaction."""
        return self._lock().state

    def outage_at(self, time: float) -> bool:
        """Whether the breaker was open at ``time`` (a lapse then is forgiven)."""
        return self._read().outage_at(time)

    # -- outcomes -------------------------------------------------------------

    def _record(self, rows: list[dict[str, Any]]) -> None:
        if not self._trimmed:
            self.conn.execute(sa.delete(o).where(
                _mine(o, self.project, self.queue),
                o.c.time < self.policy.window_start(self.now)))
            self._trimmed = True
        self.conn.execute(sa.insert(o), [
            {"project": self.project, "queue": self.queue, **row} for row in rows])

    def _window(self) -> tuple[int, int, int]:
        """(failures, successes, distinct failed messages) of the window."""
        failures, total, failed = self.conn.execute(
            sa.select(sa.func.count(o.c.message_id), sa.func.count(),
                      sa.func.count(sa.distinct(o.c.message_id)))
            .where(_mine(o, self.project, self.queue),
                   o.c.time >= self.policy.window_start(self.now))).one()
        return int(failures), int(total) - int(failures), int(failed)

    # -- transitions ---------------------------------------------------------

    def _change(self, state: str, *, forced: bool = False) -> None:
        row = self._lock()
        failures, successes, _ = self._window()
        previous, row.state, row.since = row.state, state, self.now
        self.events.append(event_row(
            events.BREAKER, self.project, self.queue, self.now,
            detail=events.breaker_detail(state, previous, row.description, failures,
                                         successes, forced=forced)))

    def _open(self, *, forced: bool = False) -> None:
        row = self._lock()
        row.description = most_common(self.conn, self.project, self.queue,
                                      self.policy.window_start(self.now))
        row.tripped_at = self.now
        row.next_probe = self.now + self.policy.probe_interval
        row.probe_claim_id, row.probe_successes = None, 0
        self._change(rules.OPEN, forced=forced)

    def _close(self, *, forced: bool = False) -> None:
        row = self._lock()
        self._change(rules.CLOSED, forced=forced)
        row.closed_at = self.now
        row.redrive_due = self.policy.auto_redrive_max > 0
        row.next_probe, row.probe_claim_id, row.probe_successes = None, None, 0
        # Cleared, so that the outage's failures do not trip it again.
        self.conn.execute(sa.delete(o).where(_mine(o, self.project, self.queue)))

    def _probe_failed(self) -> None:
        row = self._lock()
        self.held_until = self.policy.probe_hold(self.now)
        row.probe_claim_id, row.probe_successes = None, 0
        row.next_probe = self.now + self.policy.probe_interval
        if row.state == rules.HALF_OPEN:
            self._change(rules.OPEN)

    # -- what the driver's steps call ---------------------------------------

    def failure(self, message_id: str, description: str | None, *, at: float,
                claim_id: str | None = None) -> bool:
        """A failed delivery of ``message_id`` at ``at``; whether it is forgiven.

        A reject passes its claim id (a probe's reject is a failed probe) and
        ``at`` = now; a lapse passes the claim's expiry, and is forgiven when
        the breaker was open then.
        """
        row = self._lock()
        forgiven = row.outage_at(at)
        self._record([{"time": at, "message_id": message_id,
                       "description": rules.stored_description(description)}])
        if row.state == rules.CLOSED:
            if rules.trips(self.policy, *self._window()):
                self._open()
        elif claim_id is not None and claim_id == row.probe_claim_id:
            self._probe_failed()
        self._save()
        return forgiven

    def successes(self, claim_ids: list[str]) -> None:
        """Deletes by the holders of these live claims (one per deleted message)."""
        if not claim_ids:
            return
        row = self._read()
        self._record([{"time": self.now, "message_id": None, "description": None}
                      for _ in claim_ids])
        if row.state == rules.CLOSED or row.probe_claim_id not in claim_ids:
            return
        row = self._lock()  # read again under the lock: another step may have moved it
        if row.state == rules.CLOSED or row.probe_claim_id not in claim_ids:
            return
        row.probe_claim_id = None
        row.probe_successes += 1
        if row.probe_successes >= self.policy.close_after:
            self._close()
        else:
            if row.state == rules.OPEN:
                self._change(rules.HALF_OPEN)
            row.next_probe = self.now  # the next probe may go at once
        self._save()

    def allowance(self, limit: int) -> int:
        """How many messages a claim may deliver now: ``limit``, 1 (a probe) or 0."""
        if self._read().state == rules.CLOSED:
            return limit
        row = self._lock()
        if row.state == rules.CLOSED:
            return limit
        if row.probe_claim_id is not None:
            holders = self.conn.execute(
                sa.select(m.c.claim_expires).where(m.c.claim_id == row.probe_claim_id)).all()
            if any(h.claim_expires is not None and h.claim_expires > self.now for h in holders):
                return 0  # the probe is out
            if holders:
                # Its claim lapsed: a failed probe. The claim's step judges
                # the message's lapse and holds it back (lapsed_probe).
                self.lapsed_probe = row.probe_claim_id
                self._probe_failed()
            else:
                row.probe_claim_id = None  # released, or its message is gone: no verdict
            self._save()
        return 1 if row.next_probe is None or self.now >= row.next_probe else 0

    def delivered(self, claim_id: str) -> None:
        """The claim allowed by ``allowance`` delivered: on an open breaker, the probe."""
        row = self._read()
        if row.state == rules.CLOSED:
            return
        row = self._lock()
        row.probe_claim_id = claim_id
        row.next_probe = self.now + self.policy.probe_interval
        self._save()

    def force(self, state: str) -> None:
        row = self._lock()
        if state == rules.OPEN and row.state == rules.CLOSED:
            self._open(forced=True)
        elif state == rules.CLOSED and row.state != rules.CLOSED:
            self._close(forced=True)
        else:
            return
        self._save()

    def breaker_state(self) -> BreakerState:
        row = self._read()
        description = row.description
        if row.state == rules.CLOSED:
            description = most_common(self.conn, self.project, self.queue,
                                      self.policy.window_start(self.now))
        return BreakerState(state=row.state, since=row.since or 0.0, description=description,
                            tripped_at=row.tripped_at, closed_at=row.closed_at,
                            redrive_due=row.redrive_due,
                            # Set when it opens, kept when it closes.
                            outage_description=(None if row.tripped_at is None
                                                else row.description))


def most_common(conn: sa.Connection, project: str, queue: str, start: float) -> str | None:
    """zq.poison.breaker.most_common of the queue's failures since ``start``, in SQL."""
    count = sa.func.count().label("n")
    latest = sa.func.max(o.c.time).label("latest")
    found = conn.execute(
        sa.select(o.c.description, count, latest)
        .where(_mine(o, project, queue), o.c.time >= start, o.c.message_id.is_not(None),
               o.c.description.is_not(None))
        .group_by(o.c.description)
        .order_by(count.desc(), latest.desc())
        .limit(1)
    ).first()
    return None if found is None else found.description


def forget(conn: sa.Connection, project: str, queue: str) -> None:
    """Drop the queue's breaker and outcomes (queue delete and purge)."""
    conn.execute(sa.delete(b).where(_mine(b, project, queue)))
    conn.execute(sa.delete(o).where(_mine(o, project, queue)))


class SqlBreakers(BreakerLog):
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def read(self, project: str, queue: str, policy: BreakerPolicy, now: float) -> BreakerState:
        def work(conn: sa.Connection) -> BreakerState:
            state = BreakerStep(conn, project, queue, policy, now).breaker_state()
            if state.since == 0.0 and state.tripped_at is None:
                created = conn.execute(sa.select(queues.c.created).where(
                    queues.c.project == project, queues.c.name == queue)).scalar()
                return replace(state, since=float(created or initial_state().since))
            return state

        return self._db.read(work)

    def force(self, project: str, queue: str, state: str, policy: BreakerPolicy,
              now: float) -> BreakerState:
        if state not in rules.FORCEABLE:
            raise ValueError(f"a breaker is forced {' or '.join(rules.FORCEABLE)}, not {state!r}")

        def work(conn: sa.Connection) -> BreakerState:
            step = BreakerStep(conn, project, queue, policy, now)
            step.force(state)
            record(conn, step.events)
            return step.breaker_state()

        return self._db.write(work)

    def due_redrives(self) -> list[tuple[str, str]]:
        query = sa.select(b.c.project, b.c.queue).where(b.c.redrive_due.is_(True))
        return [(row.project, row.queue)
                for row in self._db.read(lambda conn: conn.execute(query).all())]

    def redrive_done(self, project: str, queue: str, closed_at: float) -> None:
        self._db.write(lambda conn: conn.execute(
            sa.update(b).where(_mine(b, project, queue), b.c.closed_at == closed_at)
            .values(redrive_due=False)))
