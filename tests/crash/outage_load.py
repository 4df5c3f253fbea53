"""Consumers through a dependency outage, for the breaker's concurrency and crash tests.

``OutageConsumer`` threads claim from one queue of whichever server is up
(``Target``) with zq.client: until ``outage`` ends every message fails
(a retry reject, or a terminal one for the consumers told so, both with
the outage's description); after it, every message is deleted with its
claim id. Deletes the server acknowledged are counted per message in a
shared ``Deliveries``, as are the claims' deliveries, with their times.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.crash.workload import Target
from zq.client import Client, ZqClientError
from zq.poison.breaker import policy_from_metadata
from zq.storage import open_storage
from zq.storage.breakers import BreakerState

OUTAGE_DESCRIPTION = "OperationalError: orders-db unreachable (connection refused)"


class DependencyOutage:
    """The dependency the consumers need: down until ``end()``; thread-safe.

    ``end()`` returns once no failure reported during the outage is still on
    its way. Without that, a reject sent just before the end can reach the
    server after the probes have closed the breaker: a failure after the
    outage, which is rightly counted (and may dead letter its message, which
    the automatic redrive rightly leaves alone), not the outage's.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._down = True
        self._reporting = 0  # failures being reported now

    @contextmanager
    def failing(self) -> Iterator[bool]:
        """Whether the dependency is down; a failure is reported inside the block."""
        with self._changed:
            down = self._down
            self._reporting += down
        try:
            yield down
        finally:
            if down:
                with self._changed:
                    self._reporting -= 1
                    self._changed.notify_all()

    def end(self, timeout: float = 30) -> None:
        """The dependency is back; waits for the failures still being reported."""
        with self._changed:
            self._down = False
            assert self._changed.wait_for(lambda: self._reporting == 0, timeout), (
                "failures still being reported after the outage ended")


@dataclass
class Deliveries:
    """What the consumers were handed and what the server acknowledged; thread-safe."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    deleted: Counter = field(default_factory=Counter)  # message id -> 204 deletes
    delivered: list[tuple[float, str]] = field(default_factory=list)  # (time, message id)
    failed: int = 0  # rejects answered 204


class OutageConsumer(threading.Thread):
    """Claims, then fails (during ``outage``) or deletes each message, until stopped."""

    def __init__(self, target: Target, project: str, queue: str, outage: DependencyOutage,
                 ledger: Deliveries, *, terminal: bool, batch: int = 5,
                 claim_ttl: int = 60) -> None:
        super().__init__(name=f"outage-consumer-{queue}", daemon=True)
        self.target, self.project, self.queue = target, project, queue
        self.outage, self.ledger, self.terminal, self.batch = outage, ledger, terminal, batch
        self.claim_ttl = claim_ttl
        self.stopping = threading.Event()
        self.errors: list[str] = []
        self._held: str | None = None  # the claim a killed server left this consumer

    def run(self) -> None:
        client: Client | None = None
        url = None
        while not self.stopping.is_set():
            current = self.target.get(timeout=1.0)
            if current is None:
                continue
            if current != url:
                if client is not None:
                    client.close()
                url, client = current, Client(current, project=self.project, timeout=10)
            assert client is not None
            try:
                self._round(client)
            except ZqClientError as exc:  # the server was killed under the request
                if exc.status not in (0, 500, 502, 503):
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                time.sleep(0.05)
        if client is not None:
            client.close()

    def _round(self, client: Client) -> None:
        if self._held is not None:
            # Its messages would otherwise wait for the claim's ttl (a lapse).
            client.release(self.queue, self._held)
            self._held = None
        claim = client.claim(self.queue, limit=self.batch, ttl=self.claim_ttl, grace=60)
        if claim is None:
            time.sleep(0.02)
            return
        self._held = claim.id
        with self.ledger.lock:
            self.ledger.delivered += [(time.time(), m.id) for m in claim.messages]
        for message in claim.messages:
            with self.outage.failing() as down:
                if down:
                    client.reject(self.queue, message.id, claim.id,
                                  description=OUTAGE_DESCRIPTION, retry=not self.terminal)
                    with self.ledger.lock:
                        self.ledger.failed += 1
            if not down:
                client.delete_message(self.queue, message.id, claim_id=claim.id)
                with self.ledger.lock:
                    self.ledger.deleted[message.id] += 1
        self._held = None


def breaker_of(uri: str, project: str, queue: str, metadata: dict[str, Any]) -> BreakerState:
    """The queue's breaker as the storage has it now."""
    policy = policy_from_metadata(metadata)
    assert policy is not None
    storage = open_storage(uri)
    try:
        return storage.breakers.read(project, queue, policy, time.time())
    finally:
        storage.close()


def skip_without_breaker(uri: str) -> None:
    """pytest.skip on a backend whose driver runs no breaker yet."""
    import pytest

    storage = open_storage(uri)
    try:
        if not storage.has_breaker:
            pytest.skip("this driver does not carry out the breaker yet (Storage.has_breaker)")
    finally:
        storage.close()


def wait_for(condition: Any, timeout: float, what: str,
             explain: Any = lambda: "") -> None:
    """Poll ``condition()`` every 50 ms until it is true; AssertionError after ``timeout``.

    ``explain()`` adds to the error what the state was then.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}{explain()}"
        time.sleep(0.05)


def leftovers(uri: str, project: str, queues: tuple[str, ...]) -> str:
    """The messages still in ``queues``, with how they got there: for a failure's message."""
    storage = open_storage(uri)
    try:
        return "".join(
            f"\n  {queue}: {record}" for queue in queues
            for record in storage.messages.list(project, queue, limit=100, echo=True,
                                                include_claimed=True, include_delayed=True))
    finally:
        storage.close()


def audit_every_message_deleted_once(uri: str, project: str, posted: list[str]) -> list[Any]:
    """The project's event log, checked: each posted message ended deleted, exactly once.

    Returns the events, for the caller's own checks of how they got there.
    """
    from collections import Counter

    from tests.crash.audit import project_events, replay
    from zq import events
    from zq.storage import open_storage

    storage = open_storage(uri)
    try:
        logged = project_events(storage, project)
    finally:
        storage.close()
    fates = replay(logged)
    assert set(fates) == set(posted)
    assert all(not fate.alive and fate.kinds[-1] == events.DELETED for fate in fates.values())
    assert Counter(e.message_id for e in logged if e.kind == events.DELETED) == Counter(posted)
    return logged
