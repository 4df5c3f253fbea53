"""One thread and one connection per worker that hears the backend's wake-ups.

The common part of the Redis (pub/sub), PostgreSQL (LISTEN) and MongoDB
(change stream) listeners of waiting claims (zq.storage.wakeups): a
daemon thread that connects, reports each queue it hears of, and connects
again after the connection failed (a restart, a failover), waiting a
growing while between attempts. A wake-up sent while the listener was not
connected is lost, so each time the listener is connected again it wakes
every waiter once: each tries to claim, and finds whatever was missed.
The first connection wakes nobody (a wake-up for nothing is an attempt
for nothing): a claim that started waiting before it learns of what it
missed from the re-check, within one interval.

A backend gives ``connect`` (connected and subscribed when it returns:
what is sent from then on is heard), ``receive`` (the queues heard within
a timeout) and ``disconnect``. Queues heard together are reported once
each, so a burst of posts to one queue costs its waiters one attempt.
"""

from __future__ import annotations

import logging
import threading
from abc import abstractmethod
from collections.abc import Callable, Iterable
from typing import Any

from zq.storage.wakeups import QueueKey, WakeCallback, WakeListener

log = logging.getLogger("zq.wakeups")

# The longest a receive waits before the thread looks at its stop flag:
# what close() may wait for the thread.
RECEIVE_SECONDS = 0.25
# Waits between connection attempts: doubled from FIRST_RETRY up to LAST_RETRY.
FIRST_RETRY = 0.05
LAST_RETRY = 2.0


class ThreadedListener(WakeListener):
    """A listener thread with its connection (see the module documentation)."""

    name = "wake-ups"

    def __init__(self, wake: WakeCallback, wake_all: Callable[[], None] | None) -> None:
        self._wake = wake
        self._wake_all = wake_all or (lambda: None)
        self._stop = threading.Event()
        self._connected = threading.Event()
        self.reconnects = 0  # connections made after the first one
        self._thread = threading.Thread(target=self._run, name=f"zq {self.name}", daemon=True)

    def start(self) -> ThreadedListener:
        self._thread.start()
        return self

    @property
    def connected(self) -> bool:
        """Whether the listener is connected now (it hears wake-ups)."""
        return self._connected.is_set()

    def wait_connected(self, timeout: float) -> bool:
        """Wait until the listener is connected; whether it is."""
        return self._connected.wait(timeout)

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(RECEIVE_SECONDS * 4)

    @abstractmethod
    def connect(self) -> Any:
        """A connection that hears every wake-up sent from now on."""

    @abstractmethod
    def receive(self, session: Any, timeout: float) -> Iterable[QueueKey]:
        """The queues heard within ``timeout`` seconds (all those already arrived)."""

    @abstractmethod
    def disconnect(self, session: Any) -> None:
        """Close the connection; never raises."""

    def _run(self) -> None:
        delay = FIRST_RETRY
        first = True
        failing = False
        while not self._stop.is_set():
            try:
                session = self.connect()
            except Exception as exc:
                if not failing:
                    log.warning("%s: cannot connect (%s); waiting claims rely on the "
                                "re-check until it can", self.name, exc)
                    failing = True
                self._stop.wait(delay)
                delay = min(delay * 2, LAST_RETRY)
                continue
            if failing:
                log.warning("%s: connected again", self.name)
            failing = False
            delay = FIRST_RETRY
            if not first:
                self.reconnects += 1
            first = False
            self._connected.set()
            try:
                if self.reconnects:
                    # Whatever was sent while the connection was lost is lost.
                    self._wake_all()
                self._listen(session)
            except Exception as exc:
                if not self._stop.is_set():
                    log.warning("%s: connection lost (%s); connecting again", self.name, exc)
            finally:
                self._connected.clear()
                self.disconnect(session)

    def _listen(self, session: Any) -> None:
        while not self._stop.is_set():
            for key in dict.fromkeys(self.receive(session, RECEIVE_SECONDS)):
                self._wake(*key)
