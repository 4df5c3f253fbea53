"""PostgreSQL's part of the SQL driver: posts, claims and bulk deletes as one statement.

PostgreSQL chains INSERT/UPDATE/DELETE ... RETURNING into the INSERT of
their events in one WITH query: one round trip instead of three per change.
SQLite and MariaDB have no data-modifying WITH queries; the driver's
general path (messages.py, claims.py) runs there. SqlStorage takes this
module's writes where ``applies_to`` its dialect (``one_statement=``
overrides it: tests/backends.py also runs PostgreSQL on the general path,
so the contract suite covers both paths there). Each function does what
the general path does, in one statement; run them with
``Database.write_statement``. The claim differs in two ways the contract
allows: messages whose claims expired come back in the order those claims
expired (then marker), and it moves at most MOVES_PER_CLAIM exhausted
messages (docs/storage-sql.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.sql.elements import Grouping

from zq import events
from zq.poison.backoff import BackoffPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.poison.moves import Move
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import ClaimRecord, ConsumerEntry
from zq.storage.sql import predicates, wake
from zq.storage.sql.events import EVENT_COLUMNS, event_select, events_from
from zq.storage.sql.queues import queue_row
from zq.storage.sql.records import dump_json, message_record
from zq.storage.sql.schema import claims as c
from zq.storage.sql.schema import consumer_claims, queues
from zq.storage.sql.schema import events as event_table
from zq.storage.sql.schema import messages as m
from zq.storage.wake_events import wake_name


def applies_to(dialect: str) -> bool:
    """Whether the driver uses this module's writes on ``dialect`` by default."""
    return dialect == "postgresql"


_MESSAGE_COLUMNS = ("id", "project", "queue", "body", "fingerprint", "ttl", "created",
                    "expires", "delay_until", "client_id", "claim_count", "history")
_EVENT_COLUMNS = ("time", "project", "queue", "kind", "message_id", "claim_id",
                  "client_id", "claim_count", "detail")
_QUEUE_COLUMNS = ("project", "name", "metadata", "created", "metadata_version")
# Written into the statements' text (a constant of ours, no parameter).
_WAKE_CHANNEL = sa.literal_column(f"'{wake.CHANNEL}'")


# Most messages a PostgreSQL post writes as one WITH query; larger posts
# (the default max post size holds up to ~24,000 messages), and every post
# on SQLite and MariaDB, are executemany inserts in one transaction
# (benchmarks/large_posts.py: on SQLite and MariaDB executemany wins from 10).
ONE_STATEMENT_POST = 100

# SQL types of the arrays a post passes, by column type (the rest are text).
_ARRAY_TYPES = {sa.Double: "double precision[]", sa.Integer: "integer[]"}


def _array_type(column: sa.Column[Any]) -> str:
    return next((name for kind, name in _ARRAY_TYPES.items()
                 if isinstance(column.type, kind)), "text[]")


def _unnest(table: sa.Table, prefix: str, columns: tuple[str, ...]) -> str:
    """``SELECT columns`` from one array parameter a column, in array order."""
    # Binary parameters (%b): psycopg escapes every element of a text-format
    # array with a regular expression (5x the CPU of the binary dump).
    arrays = ", ".join(f"%({prefix}{c})b::{_array_type(table.c[c])}" for c in columns)
    names = ", ".join(columns)
    return (f"INSERT INTO {table.name} ({names}) SELECT {names} FROM unnest({arrays}) "
            f"WITH ORDINALITY AS rows_({names}, ord_) ORDER BY ord_")


# A post of any number of messages as one WITH query (PostgreSQL): inserts
# the queue unless it exists, the messages and their events. Each column's
# values go as one array parameter, unnested in posting order (so markers
# and cursors follow it): one statement text whatever the batch size, a
# few dozen parameters. A multi-row VALUES with a parameter per value
# (215 for 10 messages) passed psycopg's limits for caching a query's
# parsing (4,096 bytes, 50 parameters): it parsed the 20 KB text again on
# every post, half of a post's CPU in the worker (docs/benchmarks.md,
# "PostgreSQL against Redis (issue 31)"); and a text that changes with the
# batch size is never prepared by the server either.
_POST_SQL = (
    "WITH new_queue AS (INSERT INTO queues (project, name, metadata, created, "
    "metadata_version) VALUES (%(q_project)s, %(q_name)s, %(q_metadata)s, %(q_created)s, "
    "%(q_metadata_version)s) ON CONFLICT DO NOTHING), "
    f"posted AS ({_unnest(m, 'm_', _MESSAGE_COLUMNS)}) "
    f"{_unnest(event_table, 'e_', _EVENT_COLUMNS)}"
)


def _post_parameters(
    queue: dict[str, Any], rows: list[dict[str, Any]], recorded: list[dict[str, Any]]
) -> dict[str, Any]:
    """The values of ``_POST_SQL``: the queue's, then one list a column."""
    values = {f"q_{c}": queue[c] for c in _QUEUE_COLUMNS}
    values.update({f"m_{c}": [row[c] for row in rows] for c in _MESSAGE_COLUMNS})
    values.update({f"e_{c}": [event[c] for event in recorded] for c in _EVENT_COLUMNS})
    return values


def post(conn: sa.Connection, queue_row: dict[str, Any], rows: list[dict[str, Any]],
         recorded: list[dict[str, Any]]) -> None:
    """Insert the queue unless it exists, the messages and their events.

    And wake the queue's waiting claims once the statement committed
    (zq.storage.sql.wake).
    """
    conn.exec_driver_sql(_POST_SQL, _post_parameters(queue_row, rows, recorded))
    wake.after_commit(conn, [(queue_row["project"], queue_row["name"])])


def delete_many(
    conn: sa.Connection,
    project: str,
    queue: str,
    message_ids: list[str],
    claim_ids: list[str] | None,
    now: float,
    client_id: str | None,
    *,
    settle: bool = False,
) -> list[str]:
    """Delete the live messages of ``message_ids`` (held by one of ``claim_ids``,
    when given) with their events in one WITH query (and with ``settle``, the
    consumer log's settle of ``claim_ids``, in it too); the ids deleted.

    The rows are locked first, in id order, so two overlapping deletes wait
    for each other instead of deadlocking, and only rows of ``queue`` are
    then deleted. The queue is checked on the locked rows' own columns,
    never on ``messages`` in the DELETE: a condition on
    ``messages.project/queue`` there offers the planner the (project, queue,
    marker) index, and without statistics (a new or freshly loaded table,
    where every estimate is one row) it drove the DELETE from that index, a
    walk of the whole queue per delete (41 ms and 5,000 buffers with a 20k
    backlog; benchmarks/fresh_database.py). Joined on ``marker`` alone, the
    primary key is the only path there is. Ids are unique across projects,
    so the lock never holds more than the rows named.
    """
    text, constants = _delete_sql(conn.dialect, claim_ids is not None, settle)
    values = {"project": project, "queue": queue, "now": now, "ids": message_ids,
              "claim_ids": claim_ids or [], "client_id": client_id}
    parameters = {**constants, **{f"d_{k}": v for k, v in values.items()}}
    return list(conn.exec_driver_sql(text, parameters).scalars())


def _delete_param(name: str, type_: Any) -> sa.BindParameter[Any]:
    """A named parameter of the delete statement (``delete_many`` gives its value)."""
    return sa.bindparam(f"d_{name}", type_=type_)


@functools.lru_cache(maxsize=8)
def _delete_sql(dialect: sa.Dialect, by_claims: bool, settle: bool
                ) -> tuple[str, dict[str, Any]]:
    """The delete statement's text and constant parameters, built once per shape.

    As for the claim (``_claim_sql``): building this WITH query on every
    delete cost more Python than the rest of the request's storage work.
    """
    compiled = _delete_statement(by_claims, settle).compile(dialect=dialect)
    constants = {k: v for k, v in compiled.params.items() if not k.startswith("d_")}
    return str(compiled), constants


def _delete_statement(by_claims: bool, settle: bool) -> sa.Select[Any]:
    """The bulk delete as one WITH query; see ``delete_many``."""
    project = _delete_param("project", m.c.project.type)
    queue = _delete_param("queue", m.c.queue.type)
    now = _delete_param("now", sa.Double())
    ids = _delete_param("ids", ARRAY(m.c.id.type))
    claim_ids = _delete_param("claim_ids", ARRAY(m.c.claim_id.type))
    where = [predicates.alive(now), m.c.id == sa.any_(ids)]
    if by_claims:
        where += [m.c.claim_id == sa.any_(claim_ids), predicates.held(now)]
    locked = (
        sa.select(m.c.marker, m.c.project, m.c.queue)
        .where(*where)
        .order_by(m.c.id)
        .with_for_update()
        .cte("locked")
        .prefix_with("MATERIALIZED")
    )
    gone = (
        sa.delete(m)
        .where(m.c.marker == locked.c.marker,
               locked.c.project == project, locked.c.queue == queue)
        .returning(m.c.marker, m.c.id, m.c.claim_id, m.c.claim_count,
                   sa.case((predicates.held(now), m.c.claim_id)).label("holder"))
        .cte("gone")
    )
    deleted = events_from(gone, events.DELETED, project, queue, now,
                          claim_id=gone.c.holder,
                          client_id=_delete_param("client_id", m.c.client_id.type)
                          ).cte("deleted_events")
    query = sa.select(gone.c.id).order_by(gone.c.marker).add_cte(deleted)
    if settle:
        # The consumer log's settle (zq.storage.sql.consumers.settle_many): a
        # data-modifying WITH runs whether or not the query reads it.
        t = consumer_claims
        settled = (sa.update(t)
                   .where(t.c.claim_id == sa.any_(claim_ids), t.c.project == project,
                          t.c.queue == queue, t.c.settled.is_(None))
                   .values(settled=now)
                   .returning(t.c.claim_id))
        query = query.add_cte(settled.cte("settled"))
    return query


# The free index's key (migration 0009_claim_plans): ordering by this
# expression, which only ix_messages_free_marker holds, leaves the planner
# one ordered path, the partial index of unheld messages. Ordering by
# ``marker`` would let it walk the primary key or the queue index instead
# (chosen with statistics, measured: 20 ms behind 10,000 held messages).
FREE_ORDER = sa.case((m.c.claim_expires.is_(None), m.c.marker))
# The key of ix_messages_claimable_again (migration 0010_claimable_again):
# when a message with a claim is free again, its claim expired and any
# backoff after it passed. Read as a range in this order and cut at the
# batch size, whatever the number of expired claims or backoffs behind it.
CLAIMABLE_AGAIN = sa.func.greatest(m.c.claim_expires, m.c.delay_until)
# Exhausted messages a claim moves to the dead letter queue at most, so its
# own work stays bounded; the next claim moves the rest.
MOVES_PER_CLAIM = 100
_NO_BOUND = 2**63 - 1


@dataclass(frozen=True)
class ClaimRules:
    """What a queue's policies add to a claim (all None: a plain claim).

    ``exhausted_at``: the claim count from which a message is moved by
    ``move`` instead of delivered (zq.poison.dead_letter.DeadLetterPolicy).
    ``schedule`` and ``jitter``: the backoff's base delay by claim count and
    one jitter factor per message of the batch, in marker order (as
    zq.poison.backoff.BackoffPolicy computes them for the general path).
    """

    exhausted_at: int | None = None
    move: Move | None = None
    schedule: list[float] | None = None
    jitter: list[float] | None = None

    @classmethod
    def of(cls, dead_letter: DeadLetterPolicy | None, backoff: BackoffPolicy | None,
           limit: int) -> ClaimRules:
        exhausted_at = None if dead_letter is None else dead_letter.max_claim_count
        move = None if exhausted_at is None or dead_letter is None else dead_letter.move
        if move is not None:
            # The move's values are written by ``_moved`` for this kind of move only.
            assert not move.reset_claim_count and not move.count_redrive
        if backoff is None:
            return cls(exhausted_at, move)
        return cls(exhausted_at, move, [float(d) for d in backoff.schedule()],
                   [backoff.jitter_factor() for _ in range(limit)])


def one_statement_claims(rules: DeliveryRules) -> bool:
    """Whether ``claim`` carries out a claim under these rules.

    Not with ``_dead_letter_expired`` (moving a queue's expired messages
    first), a breaker or blame split (judging lapses, probes): those stay
    on the general path (zq.storage.sql.delivery, zq.storage.sql.breakers).
    """
    dead_letter = rules.dead_letter
    return ((dead_letter is None or dead_letter.expiry_move is None)
            and rules.breaker is None and not rules.blame_split)


def _candidates(project: Any, queue: Any, now: Any, limit: Any,
                exhausted_at: Any | None) -> tuple[sa.CTE, sa.CTE]:
    """Up to ``limit`` deliverable messages of each kind, locked, as two WITH parts.

    ``never_held``: no claim holds them (never claimed, or released:
    ``claim_expires IS NULL``), in queue order from the free index. Held
    messages are not in that index, so none is passed over. ``expired``:
    their claim has expired (and its backoff passed): the first ``limit`` of
    the claimable-again index's range, in the order they became free, so
    neither the number held nor the number expired adds work. Together they
    are ``predicates.free(now)``, less the exhausted messages
    (``_exhausted``).
    """
    common = [predicates.in_queue(project, queue), predicates.alive(now)]
    if exhausted_at is not None:
        # Forgiven deliveries do not count (DeadLetterPolicy.is_exhausted): a
        # queue whose breaker was turned off keeps its messages' counts.
        common.append(m.c.claim_count - m.c.forgiven_count < exhausted_at)
    never_held = (
        sa.select(m.c.marker)
        .where(*common, m.c.delay_until <= now, m.c.claim_expires.is_(None))
        .order_by(FREE_ORDER)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("never_held")
        .prefix_with("MATERIALIZED")
    )
    expired = (
        sa.select(m.c.marker, CLAIMABLE_AGAIN.label("free_at"))
        .where(*common, m.c.claim_expires.is_not(None), now >= CLAIMABLE_AGAIN)
        .order_by(CLAIMABLE_AGAIN, m.c.marker)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("expired")
        .prefix_with("MATERIALIZED")
    )
    return never_held, expired


def _exhausted(project: Any, queue: Any, now: Any, picked: sa.CTE, expired: sa.CTE,
               limit: Any, exhausted_at: Any) -> sa.CTE:
    """The exhausted free messages the claim's walk passes, locked (up to MOVES_PER_CLAIM).

    As on the general path: those ahead of the last message delivered, or
    anywhere in the queue when the batch is not full. Each kind is read
    from its own index, as in ``_candidates``, and only as far as the read
    of deliverable ones went (``expired`` stopped at ``limit``), so that
    a queue without exhausted messages is not searched for them.
    """
    def full(rows: sa.CTE) -> sa.ColumnElement[bool]:
        return sa.select(sa.func.count()).select_from(rows).scalar_subquery() >= limit

    bound = sa.case((full(picked), sa.select(sa.func.max(picked.c.marker)).scalar_subquery()),
                    else_=_NO_BOUND)
    # The last expired one read, in the index's order (ties of one claim's
    # expiry broken by marker), or the whole range when the read ran dry.
    last = (sa.select(expired.c.free_at, expired.c.marker)
            .order_by(expired.c.free_at.desc(), expired.c.marker.desc()).limit(1).subquery())
    reach = sa.tuple_(
        sa.case((full(expired), sa.select(last.c.free_at).scalar_subquery()), else_=now),
        sa.case((full(expired), sa.select(last.c.marker).scalar_subquery()), else_=_NO_BOUND),
    )
    common = (predicates.in_queue(project, queue), predicates.alive(now),
              m.c.claim_count - m.c.forgiven_count >= exhausted_at)
    never_held = (
        sa.select(m.c.marker)
        .where(*common, m.c.delay_until <= now, m.c.claim_expires.is_(None),
               bound > FREE_ORDER)
        .order_by(FREE_ORDER)
        .limit(MOVES_PER_CLAIM)
        .with_for_update(skip_locked=True)
    )
    expired_ones = (
        sa.select(m.c.marker)
        .where(*common, m.c.claim_expires.is_not(None), now >= CLAIMABLE_AGAIN,
               sa.tuple_(CLAIMABLE_AGAIN, m.c.marker) <= reach, m.c.marker < bound)
        .order_by(CLAIMABLE_AGAIN, m.c.marker)
        .limit(MOVES_PER_CLAIM)
        .with_for_update(skip_locked=True)
    )
    both = sa.union_all(never_held.subquery().select(),
                        expired_ones.subquery().select()).subquery()
    return (sa.select(both.c.marker).order_by(both.c.marker).limit(MOVES_PER_CLAIM)
            .cte("exhausted").prefix_with("MATERIALIZED"))


def _moved(queue: Any, now: Any, exhausted: sa.CTE) -> sa.CTE:
    """Move the exhausted messages as the claim's move says (zq.poison.moves), as a WITH part.

    The same values as zq.storage.sql.moves.move_rows: in the destination,
    free, created now with the move's ttl (or its own), the history entry
    appended; RETURNING what their events need. The move's destination,
    ttl, history entry and detail are parameters (``_claim_parameters``).
    """
    ttl = sa.func.coalesce(_param("move_ttl", sa.Integer()), m.c.ttl)
    entry = sa.cast(_param("move_history", sa.Text()), JSONB)
    history = sa.func.coalesce(sa.func.nullif(m.c.history, ""), "[]")
    detail = sa.cast(_param("move_detail", sa.Text()), JSONB).op("||")(
        sa.func.jsonb_build_object(events.FINGERPRINT, m.c.fingerprint,
                                   events.SAMPLE, sa.func.left(m.c.body, events.SAMPLE_CHARS)))
    return (
        sa.update(m)
        .where(m.c.marker == exhausted.c.marker)
        .values(queue=_param("move_to", m.c.queue.type), ttl=ttl, created=now,
                expires=now + ttl, delay_until=now, claim_id=None, claim_expires=None,
                history=sa.cast(sa.cast(history, JSONB).op("||")(entry), sa.Text()))
        .returning(m.c.marker, m.c.id, m.c.claim_count,
                   sa.cast(detail, sa.Text()).label("detail"))
        .cte("moved")
    )


def _dead_letter_queue(moved: sa.CTE) -> sa.CTE:
    """Create the dead letter queue if absent, only when something moved to it.

    And only then wake its waiting claims: the statement tells nobody what
    it moved, so this NOTIFY is sent inside it (the one place that does,
    zq.storage.sql.wake), counted once per moved row (PostgreSQL delivers
    one); a data-modifying WITH part runs whatever the query reads.
    """
    notified = sa.func.count(sa.func.pg_notify(_WAKE_CHANNEL, _param("dlq_wake", sa.Text())))
    values = sa.select(*[_param(f"dlq_{c}", queues.c[c].type) for c in _QUEUE_COLUMNS]
                       ).where(sa.select(notified).select_from(moved).scalar_subquery() > 0)
    return (postgresql.insert(queues).from_select(list(_QUEUE_COLUMNS), values)
            .on_conflict_do_nothing().cte("dead_letter_queue"))


def _backoff_until(expires: Any, picked: sa.CTE) -> sa.ColumnElement[float]:
    """``delay_until`` of a message claimed now: the claim's expiry plus its backoff."""
    # In parentheses: PostgreSQL reads ``$1::float8[][i]`` as a type, not a subscript.
    schedule = Grouping(sa.cast(_param("schedule", ARRAY(sa.Double())), ARRAY(sa.Double())))
    jitter = Grouping(sa.cast(_param("jitter", ARRAY(sa.Double())), ARRAY(sa.Double())))
    step = sa.func.least(m.c.claim_count + 1, sa.func.cardinality(schedule))
    return expires + schedule[step] * jitter[picked.c.position]


def _param(name: str, type_: Any) -> sa.BindParameter[Any]:
    """A named parameter of the claim statement (``_claim_parameters`` gives its value)."""
    return sa.bindparam(f"c_{name}", type_=type_)


@functools.lru_cache(maxsize=16)
def _claim_sql(dialect: sa.Dialect, dead_letter: bool, backoff: bool, consumer: bool = False
               ) -> tuple[str, dict[str, Any]]:
    """The claim statement's text and its constant parameters, built once per shape.

    Building and compiling this WITH query each time cost more than running
    it (a few ms of Python a claim on a loaded machine, measured with
    benchmarks/claim_scaling.py); every value that changes is a named
    parameter (``_param``), and SQLAlchemy's own constants keep the values
    it gave them.
    """
    compiled = _claim_statement(dead_letter, backoff, consumer).compile(dialect=dialect)
    constants = {k: v for k, v in compiled.params.items() if not k.startswith("c_")}
    return str(compiled), constants


def _claim_statement(dead_letter: bool, backoff: bool, consumer: bool = False
                     ) -> sa.Select[Any]:
    """The claim as one WITH query; see ``claim``."""
    project = _param("project", m.c.project.type)
    queue = _param("queue", m.c.queue.type)
    now = _param("now", sa.Double())
    expires = _param("expires", sa.Double())
    limit = _param("limit", sa.Integer())
    claim_id = _param("claim_id", c.c.id.type)
    client_id = _param("client_id", c.c.client_id.type)
    exhausted_at = _param("exhausted_at", sa.Integer()) if dead_letter else None
    never_held, expired = _candidates(project, queue, now, limit, exhausted_at)
    candidates = sa.union_all(sa.select(never_held.c.marker),
                              sa.select(expired.c.marker)).subquery()
    picked = (
        sa.select(candidates.c.marker,
                  sa.func.row_number().over(order_by=candidates.c.marker).label("position"))
        .order_by(candidates.c.marker)
        .limit(limit)
        .cte("picked")
        .prefix_with("MATERIALIZED")
    )
    values: dict[str, Any] = {
        "claim_id": claim_id,
        "claim_expires": expires,
        "claim_count": m.c.claim_count + 1,
        "expires": predicates.at_least(m.c.expires, _param("lives_until", sa.Double())),
    }
    if backoff:
        values["delay_until"] = _backoff_until(expires, picked)
    marked = (
        sa.update(m)
        .where(m.c.marker == picked.c.marker)
        .values(values)
        .returning(*m.c)
        .cte("marked")
    )
    new_claim = sa.insert(c).from_select(
        ["id", "project", "queue", "ttl", "grace", "created", "expires", "client_id"],
        sa.select(claim_id, project, queue, _param("ttl", sa.Integer()),
                  _param("grace", sa.Integer()), now, expires, client_id,
                  ).where(sa.exists(sa.select(marked.c.marker))),
    ).cte("new_claim")
    claimed = event_select(marked, events.CLAIMED, project, queue, now,
                           claim_id=claim_id, client_id=client_id)
    parts = [new_claim]
    if consumer:
        parts += _consumer_record(project, queue, claim_id, now, expires, marked)
    if dead_letter:
        assert exhausted_at is not None
        moved = _moved(queue, now, _exhausted(project, queue, now, picked, expired, limit,
                                              exhausted_at))
        parts.append(_dead_letter_queue(moved))
        dead_lettered = event_select(moved, events.DEAD_LETTERED, project, queue, now,
                                     claim_id=sa.null(), client_id=client_id,
                                     detail=moved.c.detail)
        in_order = sa.union_all(
            dead_lettered.add_columns(sa.literal(0).label("phase"), moved.c.marker),
            claimed.add_columns(sa.literal(1).label("phase"), marked.c.marker),
        ).subquery()
        source = (sa.select(*list(in_order.c)[:len(EVENT_COLUMNS)])
                  .order_by(in_order.c.phase, in_order.c.marker))
    else:
        source = claimed.order_by(marked.c.marker)
    parts.append(sa.insert(event_table).from_select(EVENT_COLUMNS, source).cte("events_"))
    return sa.select(marked).order_by(marked.c.marker).add_cte(*parts)


def _consumer_record(project: Any, queue: Any, claim_id: Any, now: Any, expires: Any,
                     marked: sa.CTE) -> list[sa.CTE]:
    """The claim's consumer record (ConsumerEntry) as two WITH parts, written only
    when the claim took messages, as zq.storage.sql.consumers.write_record
    writes it in the general path's transaction: forget the queue's records
    that expired before ``c_forget_before``, insert this claim's. (The new
    record expires after that bound, so the two never touch one row.)"""
    took = sa.exists(sa.select(marked.c.marker))
    forgotten = sa.delete(consumer_claims).where(
        consumer_claims.c.project == project, consumer_claims.c.queue == queue,
        consumer_claims.c.expires < _param("forget_before", sa.Double()), took,
    ).cte("forgotten_consumers")
    recorded = sa.insert(consumer_claims).from_select(
        ["claim_id", "project", "queue", "client_id", "ttl", "claimed", "expires"],
        sa.select(claim_id, project, queue,
                  _param("consumer", consumer_claims.c.client_id.type),
                  _param("ttl", sa.Integer()), now, expires).where(took),
    ).cte("consumer_record")
    return [forgotten, recorded]


def _claim_parameters(project: str, queue: str, claim_id: str, now: float, ttl: int,
                      grace: int, limit: int, client_id: str | None,
                      rules: ClaimRules, consumer: ConsumerEntry | None = None
                      ) -> dict[str, Any]:
    """The values of ``_claim_statement``'s parameters for one claim."""
    values: dict[str, Any] = {
        "project": project, "queue": queue, "now": now, "expires": now + ttl,
        "lives_until": now + ttl + grace, "limit": limit, "claim_id": claim_id,
        "client_id": client_id, "ttl": ttl, "grace": grace,
    }
    if rules.move is not None:
        move = rules.move
        assert move.event == events.DEAD_LETTERED  # the statement's event kind
        values.update(
            exhausted_at=rules.exhausted_at, move_to=move.to, move_ttl=move.ttl,
            move_history=dump_json([move.history_entry(queue, now)]),
            move_detail=dump_json(move.detail), dlq_wake=wake_name(project, move.to),
            **{f"dlq_{k}": v for k, v in queue_row(project, move.to, now).items()},
        )
    if rules.schedule is not None:
        values.update(schedule=rules.schedule, jitter=rules.jitter)
    if consumer is not None:
        values.update(consumer=consumer.client_id, forget_before=consumer.forget_before(now))
    return {f"c_{k}": v for k, v in values.items()}


def claim(
    conn: sa.Connection,
    project: str,
    queue: str,
    claim_id: str,
    *,
    now: float,
    ttl: int,
    grace: int,
    limit: int,
    client_id: str | None,
    rules: ClaimRules = ClaimRules(),
    consumer: ConsumerEntry | None = None,
) -> ClaimRecord | None:
    """A claim as one WITH query (PostgreSQL), dead letter and backoff rules included.

    The same steps as the general path, in one round trip: lock up to
    ``limit`` deliverable messages in queue order (SKIP LOCKED; PostgreSQL
    rechecks the conditions on a row changed since the scan), mark them
    (with their backoff), insert the claim if any were marked; with a dead
    letter rule, move the exhausted messages the walk passes; and the
    events, the moves' ``dead_lettered`` first, then ``claimed``, each in
    marker order (one INSERT, so their order is the statement's); with a
    ``consumer``, the claim's consumer record (``_consumer_record``).

    The free messages are read as two disjoint sets, each through its own
    partial index (migrations 0009 and 0010), and the first ``limit`` of
    both in marker order are taken; the rows locked but not taken are
    unlocked when the statement ends. Neither read passes a message held by
    a live claim, nor the backlog of expired claims, so a claim costs the
    same behind 10,000 held or expired messages as behind none
    (benchmarks/claim_scaling.py), and neither depends on statistics: see
    ``_candidates``.
    """
    dead_letter = rules.move is not None and rules.exhausted_at is not None
    text, constants = _claim_sql(conn.dialect, dead_letter, rules.schedule is not None,
                                 consumer is not None)
    parameters = {**constants, **_claim_parameters(project, queue, claim_id, now, ttl, grace,
                                                   limit, client_id, rules, consumer)}
    rows = conn.exec_driver_sql(text, parameters).all()
    expires = now + ttl
    if not rows:
        return None
    return ClaimRecord(id=claim_id, queue=queue, ttl=ttl, grace=grace, created=now,
                       expires=expires, messages=[message_record(row, now) for row in rows])
