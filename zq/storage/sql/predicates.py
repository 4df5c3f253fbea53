"""The message states of the contract as SQL conditions."""

from __future__ import annotations

import sqlalchemy as sa

from zq.storage.sql.schema import messages as m


def in_queue(project: str, queue: str) -> sa.ColumnElement[bool]:
    return sa.and_(m.c.project == project, m.c.queue == queue)


def alive(now: float) -> sa.ColumnElement[bool]:
    return m.c.expires > now


def held(now: float) -> sa.ColumnElement[bool]:
    """Held by a live claim."""
    return m.c.claim_expires > now


def unheld(now: float) -> sa.ColumnElement[bool]:
    return sa.or_(m.c.claim_expires.is_(None), m.c.claim_expires <= now)


def free(now: float) -> sa.ColumnElement[bool]:
    """Alive, not held, not delayed: a claim candidate."""
    return sa.and_(alive(now), unheld(now), m.c.delay_until <= now)


def at_least(column: sa.Column[float], value: float) -> sa.ColumnElement[float]:
    """``max(column, value)`` in SQL every dialect understands."""
    return sa.case((column < value, value), else_=column)


def delayed(now: float) -> sa.ColumnElement[bool]:
    """Alive, not held, and not claimable yet (a post's delay or a backoff)."""
    return sa.and_(alive(now), unheld(now), m.c.delay_until > now)


def carried_backoff() -> sa.ColumnElement[float]:
    """The backoff a held message carries past its claim's expiry (zq.poison.backoff).

    ``delay_until - claim_expires`` when positive, else 0. An UPDATE that
    uses it must assign ``delay_until`` before ``claim_expires``:
    MariaDB evaluates SET assignments left to right on updated values.
    """
    return sa.case(
        (m.c.delay_until > m.c.claim_expires, m.c.delay_until - m.c.claim_expires),
        else_=0.0,
    )
