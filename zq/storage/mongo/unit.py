"""One change and its events, as one unit.

Where the server runs transactions (a replica set or a sharded cluster) the
change and its events are written in one transaction; elsewhere (a
standalone server, mongomock) the events are written right after the
change, by the same code with no session. Which one applies is detected at
start-up (zq.storage.mongo.connection.supports_transactions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from zq.storage.mongo import events

T = TypeVar("T")

# A change gets the session (None without transactions) and returns its
# result and the events to record. It may run more than once: a transaction
# that hits a write conflict is retried from the start.
Change = Callable[[Any], tuple[T, list[dict[str, Any]]]]


class UnitRunner:
    """Runs changes with their events, transactionally when the server can."""

    def __init__(self, client: Any, database: Any, *, transactions: bool) -> None:
        self._client = client
        self._database = database
        self.transactions = transactions

    def run(self, change: Change[T]) -> T:
        """Apply ``change`` and record the events it returns."""
        if not self.transactions:
            return self._apply(change, None)
        with self._client.start_session() as session:
            return session.with_transaction(lambda s: self._apply(change, s))

    def _apply(self, change: Change[T], session: Any) -> T:
        result, docs = change(session)
        events.append(self._database, docs, session=session)
        return result
