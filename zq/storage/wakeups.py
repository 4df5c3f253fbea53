"""The storage contract of waiting claims (``POST .../claims?wait=S``): when to try again.

``Storage.wakeups`` of every driver. A claim that found nothing waits in its
worker's event loop (zq.waiting); it tries again when something may have
become claimable. Three sources tell it so, and this module is the part
each backend provides:

- ``earliest_claimable``: one query for many queues at once, the moment
  each queue next has (or already has) a claimable message. The waiting
  machinery asks it for every queue its waiters wait on, once per re-check
  interval (one query per worker, not per waiter), wakes the queues whose
  moment has come and sets a timer for the others, so a ``delay``, a
  backoff or a claim that lapses wakes a waiter with no event at all.
- ``notify``: called by the service after a change that may free messages
  in a queue (a post, a release, a retry reject, a redrive into it), for
  a backend whose listeners learn of changes only when told (the default
  does nothing: its change is found by the next re-check).
- ``listen``: a connection that reports, from any process and any server,
  queues that may have become claimable (Redis pub/sub, PostgreSQL
  LISTEN/NOTIFY, MongoDB change streams). None (the default): the backend
  has none, and waiters rely on the re-check.

A report is a hint, never a promise: a waiter woken for nothing tries to
claim, finds nothing and waits on; a lost report costs at most one
re-check interval. So a driver may report too early or too often, never
too late.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection

QueueKey = tuple[str, str]  # (project, queue)
# Called with (project, queue), from a thread of the listener.
WakeCallback = Callable[[str, str], None]


class WakeListener(ABC):
    """A running listener (``Wakeups.listen``): its connection and thread."""

    @abstractmethod
    def close(self) -> None:
        """Stop reporting and release the connection; returns promptly."""


class Wakeups(ABC):
    """When a queue may next be claimed from (module documentation)."""

    @abstractmethod
    def earliest_claimable(self, keys: Collection[QueueKey]) -> dict[QueueKey, float]:
        """Of each queue of ``keys`` that holds a live message, the earliest moment
        one may be claimed (at most now when one is free now).

        A message counts from the later of its ``delay_until`` and the
        expiry of the claim holding it, if that comes before its own
        expiry; on a queue whose stored breaker is open or half-open, not
        before its next probe (zq.storage.breakers: a claim gets nothing
        sooner). A queue with no such message is left out. The moment may be
        earlier than the truth (a waiter then tries once for nothing),
        never later. One round trip for all ``keys``; reads only.
        """

    def notify(self, project: str, queue: str) -> None:
        """Tell this backend's listeners that ``queue`` may have become claimable.

        The default does nothing: a backend without listeners, or one whose
        writes report themselves (a NOTIFY in the transaction, a PUBLISH in
        the script), needs no call.
        """
        return None

    def listen(
        self, wake: WakeCallback, wake_all: Callable[[], None] | None = None
    ) -> WakeListener | None:
        """Start reporting queues that may have become claimable, by calling
        ``wake(project, queue)`` from a thread of the listener; None when the
        backend cannot (waiters then rely on the re-check).

        ``wake_all()`` (when given) is called, from the same thread, each time
        the listener is connected (again): what was sent while it was not
        may be lost, so every waiter should try once.
        """
        return None
