"""PostgreSQL: the event log in an order that no later commit can break.

``events.seq`` is taken when a row is inserted, not when its transaction
commits, so a reader that went up to the newest visible event could pass
the lower ``seq`` of a transaction still in flight and never see it.

Every event row therefore records the transaction that wrote it: ``xid``,
an ``xid8`` column defaulting to ``pg_current_xact_id()`` (migration 0004,
PostgreSQL only), so the inserts of one-statement WITH queries run in
autocommit get it as well as those of explicit transactions. The log is
read in (xid, seq) order and only below a *bound*: the oldest transaction
still in flight in this database, or the snapshot's ``xmax`` when there is
none. Every transaction below the bound has ended (committed: visible;
rolled back: never will be) and every later one gets a higher xid, so the
log below the bound never changes again and only grows at its end: nothing
is skipped and nothing waits for a timer. Events above the bound wait for
the transaction in flight to end; ``count`` includes them, so the exporter
reports them as held back.

Transactions of other databases on the same server cannot write this
table: the bound leaves out the in-flight xids that ``pg_stat_activity``
shows in another database. One that ended between the statement's snapshot
and that look is not shown and still counts, so the bound can err low,
never high. The bound is computed in the same statement (same snapshot) as
the read.

A cursor is ``"<xid>:<seq>"``. A cursor of a dataset exported before
migration 0004 is a bare ``seq``: every row it passed was written before
the migration, when all rows got the migration's own xid, so ``seq > n``
picks up exactly where it stopped.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from zq.errors import InvalidRequest
from zq.storage.sql.schema import events


class Xid8(sa.types.UserDefinedType[str]):
    """PostgreSQL's 64-bit transaction id type."""

    cache_ok = True

    def get_col_spec(self, **_kw: Any) -> str:
        return "xid8"


XID = sa.column("xid", Xid8())

_BOUND = sa.literal_column("""(
    SELECT coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))
    FROM pg_snapshot_xip(pg_current_snapshot()) AS x
    WHERE x::text::bigint % 4294967296 NOT IN (
        SELECT backend_xid::text::bigint FROM pg_stat_activity
        WHERE backend_xid IS NOT NULL
          AND datid <> (SELECT oid FROM pg_database WHERE datname = current_database())))""",
    Xid8())


def read_query(after: str | None, limit: int) -> sa.Select[Any]:
    """Up to ``limit`` events after ``after``, (xid, seq) order, below the bound."""
    return (
        sa.select(events, sa.cast(XID, sa.Text).label("xid_text"))
        .where(after_cursor(after), XID < _BOUND)
        .order_by(XID, events.c.seq)
        .limit(limit)
    )


def last_query() -> sa.Select[Any]:
    """The last event ``read_query`` can return now (ix_events_xid_seq, read backwards)."""
    return (
        sa.select(sa.cast(XID, sa.Text).label("xid_text"), events.c.seq)
        .select_from(events)
        .where(XID < _BOUND)
        .order_by(XID.desc(), events.c.seq.desc())
        .limit(1)
    )


def after_cursor(cursor: str | None) -> sa.ColumnElement[bool]:
    """Rows after ``cursor`` in (xid, seq) order; a bare ``seq`` is a pre-0004 cursor."""
    if cursor is None:
        return sa.true()
    xid, sep, seq = cursor.partition(":")
    if not sep:
        xid, seq = "", xid
    if not seq.isdigit() or (sep and not xid.isdigit()):
        raise InvalidRequest(f"{cursor!r} is not a PostgreSQL event cursor (xid:seq).")
    if not sep:
        return events.c.seq > int(seq)
    return sa.tuple_(XID, events.c.seq) > sa.tuple_(
        sa.cast(sa.literal(xid, sa.Text), Xid8()), sa.literal(int(seq), sa.BigInteger))


def cursor(row: Any) -> str:
    """The cursor of a row read with ``read_query``."""
    return f"{row.xid_text}:{row.seq}"
