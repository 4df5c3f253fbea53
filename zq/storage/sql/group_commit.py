"""Group commit: concurrent writes of one process share a transaction and its flush.

Every write (``Database.write`` and ``write_statement``) that arrives while
another group is committing waits in line; when that commit returns, the
first one waiting becomes the *leader* and runs everything in line (up to
``MAX_GROUP``) in one transaction, each unit of work inside its own
SAVEPOINT, then commits once. One WAL flush (one fsync) serves the group.

Each unit keeps its own result:

- a unit that raises (a zq error such as QueueNotFound, or a statement
  error such as an integrity violation) is rolled back to its savepoint and
  only its request gets the exception; the others commit. A unit of one
  statement (``write_statement``) takes no savepoint: if it fails, the
  group runs again as below, and again only its request gets the error;
- a unit that loses a race (deadlock, serialization failure, busy SQLite,
  the retryable errors of ``dialects.is_retryable``) or loses the
  connection aborts the whole group: the transaction is rolled back and
  every unit of it runs again on its own, with the usual retries. (InnoDB
  rolls back the whole transaction on a deadlock, not a savepoint, so this
  is the one rule that is right on every dialect.)
- nobody is answered before the shared COMMIT has returned: the group is on
  disk, or none of it is. A COMMIT that fails answers every unit with the
  error (or, if the server says the transaction lost a race, runs them
  again on their own).

The leader and the hand-off from one group to the next are
zq.storage.batching's; how a group runs and how each unit is answered is
this module's.

A group of one runs exactly as without group commit (no savepoint; on
PostgreSQL a one-statement write stays in autocommit), so a quiet server
pays nothing. See docs/storage-sql.md, "Group commit".
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc

from zq.storage.batching import Batcher, Unit
from zq.storage.sql import dialects, wake

# Units in one transaction at most: bounds how long the first of them waits
# for the last, and the locks the shared transaction holds.
MAX_GROUP = 32

Work = Callable[[sa.Connection], Any]
Solo = Callable[[Work, bool], Any]

_local = threading.local()


class _Unit(Unit):
    """One request's unit of work; its result is ``work``'s return value."""

    __slots__ = ("solo", "statement", "work")

    def __init__(self, work: Work, statement: bool) -> None:
        super().__init__()
        self.work = work
        self.statement = statement  # one statement: may run in autocommit alone
        self.solo = False  # to run again on its own (its group was aborted)


class _Abort(Exception):
    """Raised inside the shared transaction to roll all of it back."""


class GroupCommit(Batcher[_Unit]):
    """Runs write units of work in shared transactions (see the module docstring)."""

    def __init__(self, writer: sa.Engine, solo: Solo, *, window: float = 0.0,
                 notifier: wake.Notifier | None = None) -> None:
        """``solo(work, statement)`` runs one unit as without group commit.

        ``window``: seconds a new leader waits for more units before it
        starts (0: take whatever queued while the previous commit ran).
        ``notifier``: where the queues the group wakes go once it committed
        (PostgreSQL, zq.storage.sql.wake).
        """
        super().__init__(max_batch=MAX_GROUP, window=window)
        self._writer = writer
        self._notifier = notifier
        self._solo = solo
        # Test hooks: called with the group's size inside the shared
        # transaction just before COMMIT, and after COMMIT before any answer.
        self.before_commit: Callable[[int], None] | None = None
        self.after_commit: Callable[[int], None] | None = None
        # Shared commits made and the units they carried (benchmarks read them).
        self.shared_commits = 0
        self.shared_units = 0

    def run(self, work: Work, *, statement: bool = False) -> Any:
        """Run ``work`` in a shared transaction; its result once the group committed."""
        if getattr(_local, "leading", False):
            # A unit that writes again from inside a group (not done today)
            # would wait for itself; it runs on its own connection instead.
            return self._solo(work, statement)
        unit = _Unit(work, statement)
        result = self._submit(unit)
        if unit.solo:  # its group was rolled back: no result, no error
            return self._solo(work, statement)
        return result

    def _run_batch(self, group: list[_Unit]) -> None:
        if len(group) == 1:
            # No one to share with: the plain path, still as the leader,
            # so that units arriving meanwhile form the next group.
            only = group[0]
            try:
                only.result = self._solo(only.work, only.statement)
            except BaseException as error:
                only.error = error
        else:
            self._commit(group)

    def _commit(self, group: list[_Unit]) -> None:
        _local.leading = True
        try:
            # The queues the group's units wake, noted as they run in this
            # thread, go out once the group committed. A unit rolled back to
            # its savepoint may leave a queue in it: one needless wake-up,
            # after which the waiter finds nothing and waits on.
            with wake.pending() as woken, self._writer.begin() as conn:
                for unit in group:
                    self._run_unit(conn, unit)
                if self.before_commit is not None:
                    self.before_commit(len(group))
            if woken and self._notifier is not None:
                self._notifier.send(woken)
            self.shared_commits += 1
            self.shared_units += len(group)
            if self.after_commit is not None:
                self.after_commit(len(group))
        except _Abort:
            for unit in group:
                unit.solo, unit.error, unit.result = True, None, None
        except exc.DBAPIError as error:
            # The COMMIT (or BEGIN) failed: nothing of the group is known
            # to be on disk unless the server says so.
            if dialects.is_retryable(error):
                for unit in group:
                    unit.solo, unit.error, unit.result = True, None, None
            else:
                # A lost connection at COMMIT: whether the group is on disk
                # is unknown, so it is never run again; each request gets
                # the 503 a lone write gets, not the driver's raw error.
                answer: BaseException = error
                if dialects.is_unavailable(error):
                    answer = dialects.unreachable(error, self._writer.dialect.name)
                    answer.__cause__ = error
                for unit in group:
                    unit.error, unit.result = answer, None
        except BaseException as error:
            for unit in group:
                unit.error, unit.result = error, None
        finally:
            _local.leading = False

    @staticmethod
    def _run_unit(conn: sa.Connection, unit: _Unit) -> None:
        if unit.statement:
            # One statement (the PostgreSQL post, claim and bulk delete):
            # it fails rarely, so it runs without the two round trips of a
            # savepoint; if it does fail, the whole group runs again unit by
            # unit, and the failure reaches only its own request.
            try:
                unit.result = unit.work(conn)
            except Exception as error:
                raise _Abort from error
            return
        savepoint = conn.begin_nested()
        try:
            unit.result = unit.work(conn)
        except exc.DBAPIError as error:
            if dialects.is_retryable(error) or dialects.is_unavailable(error):
                raise _Abort from error
            _roll_back(savepoint)
            unit.error = error
            return
        except Exception as error:
            _roll_back(savepoint)
            unit.error = error
            return
        try:
            savepoint.commit()
        except exc.DBAPIError as error:
            raise _Abort from error


def _roll_back(savepoint: sa.NestedTransaction) -> None:
    """ROLLBACK TO the unit's savepoint; if even that fails, abort the group."""
    try:
        savepoint.rollback()
    except exc.DBAPIError as error:
        raise _Abort from error
