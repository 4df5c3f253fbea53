"""Which queues have live subscriptions: a short-lived per-process cache.

A post to a queue with subscriptions records the message body in its
``posted`` event (zq.events.BODY), so that the notifier never has to read
the queue for it (a fast consumer may have deleted the message by then).
Asking the backend on every post would cost queues without subscriptions
a read per post: the answer is cached per queue for ``SECONDS``. The
process that creates or deletes a subscription forgets its queue at once;
other processes (granian workers, servers) see the change within
``SECONDS``, and the notifier reads the queue for posts made in that
window (docs/notifications.md).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable

from zq.clock import Clock
from zq.storage.base import Storage
from zq.storage.records import NewMessage

# How long an answer is trusted; the window in which another process's new
# subscription may miss a body in the event log.
SECONDS = 2.0
# Queues remembered at most (the oldest answers go first).
CAPACITY = 10_000

# (project, queue) -> whether the queue has a live subscription (a backend read).
Lookup = Callable[[str, str], bool]


class SubscribedQueues:
    def __init__(self, clock: Clock, *, seconds: float = SECONDS,
                 capacity: int = CAPACITY) -> None:
        self._clock = clock
        self._seconds = seconds
        self._capacity = capacity
        self._known: OrderedDict[tuple[str, str], tuple[float, bool]] = OrderedDict()
        # Request threads share it; the backend read stays outside the lock.
        self._lock = threading.Lock()

    def has(self, project: str, queue: str, lookup: Lookup) -> bool:
        """Whether the queue has a live subscription, from the cache or ``lookup``."""
        key = (project, queue)
        now = self._clock.now()
        known = self._known.get(key)
        if known is not None and known[0] > now:
            return known[1]
        answer = lookup(project, queue)
        with self._lock:
            self._known[key] = (now + self._seconds, answer)
            self._known.move_to_end(key)
            if len(self._known) > self._capacity:
                self._known.popitem(last=False)
        return answer

    def forget(self, project: str, queue: str) -> None:
        """Drop the queue's answer (its subscriptions changed in this process)."""
        with self._lock:
            self._known.pop((project, queue), None)

    def with_event_bodies(self, storage: Storage, project: str, queue: str,
                          new: list[NewMessage]) -> list[NewMessage]:
        """``new``, with bodies in their posted events when the queue has subscriptions.

        The body goes into the event as stored (sealed for a queue that
        encrypts), in the post's own write: the notifier then never depends
        on the message still being in the queue. Queues without
        subscriptions pay a cached read every few seconds.
        """
        def lookup(project: str, queue: str) -> bool:
            return bool(storage.subscriptions.for_queue(project, queue))

        if not self.has(project, queue, lookup):
            return new
        return [dataclasses.replace(message, event_body=True) for message in new]
