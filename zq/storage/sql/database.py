"""Running units of work against the engine: transactions, retries, errors."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy import exc

from zq.storage.sql import dialects, wake
from zq.storage.sql.group_commit import GroupCommit

T = TypeVar("T")

log = logging.getLogger(__name__)

# A transaction that lost a race (deadlock, serialization failure, busy
# SQLite) runs again from the start; its effects were rolled back.
MAX_ATTEMPTS = 5


class Database:
    """An engine plus the two ways the driver uses it: read and write."""

    def __init__(self, engine: sa.Engine, *, group_commit: bool = False,
                 group_window: float = 0.0) -> None:
        """``group_commit``: concurrent writes share transactions (zq.storage.sql.group_commit)."""
        self.engine = engine
        self.dialect = engine.dialect.name
        self._writer = engine.execution_options(**{dialects.WRITE_OPTION: True})
        # Where each statement is its own transaction anyway (PostgreSQL at
        # READ COMMITTED), reads and one-statement writes skip BEGIN and
        # COMMIT: two round trips fewer each.
        self._autocommit = dialects.statements_autocommit(self.dialect)
        self._unwrapped = engine.execution_options(isolation_level="AUTOCOMMIT")
        # Wake-ups of waiting claims, sent once a change committed (PostgreSQL).
        self.notifier = wake.Notifier(engine) if wake.applies_to(self.dialect) else None
        self.group: GroupCommit | None = None
        if group_commit:
            self.group = GroupCommit(self._writer, self._write_alone, window=group_window,
                                     notifier=self.notifier)

    def read(self, work: Callable[[sa.Connection], T]) -> T:
        """Run ``work``, which only reads (each statement sees committed data)."""
        return self._run(self._unwrapped if self._autocommit else self.engine, work)

    def write(self, work: Callable[[sa.Connection], T]) -> T:
        """Run ``work`` in one write transaction, committed when it returns."""
        if self.group is not None:
            return self.group.run(work)  # type: ignore[no-any-return]
        return self._write_alone(work, False)

    def write_statement(self, work: Callable[[sa.Connection], T]) -> T:
        """Run ``work``, which issues exactly one (atomic) write statement."""
        if self.group is not None:
            return self.group.run(work, statement=True)  # type: ignore[no-any-return]
        return self._write_alone(work, True)

    def _write_alone(self, work: Callable[[sa.Connection], T], statement: bool) -> T:
        """A write in a transaction of its own (one statement: in autocommit where it may)."""
        if statement and self._autocommit:
            return self._run(self._unwrapped, work)
        return self._run(self._writer, work)

    def _run(self, engine: sa.Engine, work: Callable[[sa.Connection], T]) -> T:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                if self.notifier is None:
                    with engine.begin() as conn:
                        return work(conn)
                # The queues the work wakes (zq.storage.sql.wake): sent only
                # once it committed, and dropped with a rollback.
                with wake.pending() as woken, engine.begin() as conn:
                    result = work(conn)
                if woken:
                    self.notifier.send(woken)
                return result
            except exc.DBAPIError as error:
                if attempt < MAX_ATTEMPTS and dialects.is_retryable(error):
                    log.debug("retrying transaction after %s", error.orig)
                    time.sleep(0.01 * attempt)
                    continue
                if dialects.is_unavailable(error):
                    raise dialects.unreachable(error, self.dialect) from error
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        if self.notifier is not None:
            self.notifier.close()
        self.engine.dispose()
