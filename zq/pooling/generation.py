"""The management store's generation: a counter every process can watch.

It grows in the same transaction as any change that makes a cached
``(project, queue) -> pool`` mapping false: a queue unregistered, a pool
removed or pointed at another URI. A new registration does not grow it:
only mappings that exist are cached, so a new one is never shadowed.
"""

from __future__ import annotations

import sqlalchemy as sa

from zq.pooling.schema import STATE_ROW, state


def read_generation(conn: sa.Connection) -> int:
    """The current generation (one primary-key read)."""
    return conn.execute(
        sa.select(state.c.generation).where(state.c.id == STATE_ROW)
    ).scalar_one()


def bump_generation(conn: sa.Connection) -> None:
    """Invalidate every process's cached mappings, when the transaction commits."""
    conn.execute(
        sa.update(state).where(state.c.id == STATE_ROW)
        .values(generation=state.c.generation + 1)
    )
