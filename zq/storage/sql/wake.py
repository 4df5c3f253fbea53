"""PostgreSQL's wake-ups of waiting claims: NOTIFY once a change committed, LISTEN.

Sending. A transaction whose events may make a message claimable (the rule
of zq.storage.wake_events, applied by ``record``, where every transaction
of the driver writes its events, and by the one-statement post) notes the
queues it wakes (``after_commit``, in the thread running it). Only once it has
committed does ``Database`` hand them to the storage's ``Notifier``, which
sends ``NOTIFY zq_wake, '<wake_name>'`` for each from a thread and a
connection of its own, several changes' queues in one statement. A change
that rolls back notifies nobody; one that commits does, unless the process
dies in between (its waiters then learn of it from the re-check).

Why not NOTIFY inside the change's own transaction: PostgreSQL makes every
committing transaction that sent a NOTIFY wait for the one before it,
flush of its commit to disk included (a lock held across the commit, to
keep the notification queue in commit order). Eight threads posting with
the NOTIFY inside each post's statement made 4 times fewer posts per
second than without it (benchmarks/wake_latency.py). The notifier's
connection commits with ``synchronous_commit = off`` (a notification
needs no durable commit), so it holds that lock for microseconds, and a
post's own commit never waits for another's. One change still notifies
from inside its statement: the one-statement claim that dead letters
messages (zq.storage.sql.postgresql, rare: only when something moved),
since nothing outside the statement learns what it moved.

Listening. Each worker LISTENs on one connection of its own
(``PostgresWakeListener``) for all its waiters. SQLite and MariaDB/MySQL
have no notification: their waiters rely on the re-check of
zq.storage.wakeups (docs/consumers.md gives the latency).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import sqlalchemy as sa

from zq.storage.sql.records import load_json
from zq.storage.wake_events import WAKING_KINDS, parse_wake_name, wake_name, woken_queues
from zq.storage.wake_listener import FIRST_RETRY, LAST_RETRY, ThreadedListener
from zq.storage.wakeups import QueueKey, WakeCallback

log = logging.getLogger("zq.wakeups")

# One channel per database: the payload names the queue (a channel name is
# at most 63 bytes, a project id alone may be 256).
CHANNEL = "zq_wake"
# A LISTEN connection quiet for this long runs a query: a server gone
# without a word (a cut network) is found, not waited on forever.
KEEPALIVE_SECONDS = 15.0
# The queues the transaction running in this thread wakes, while
# ``Database`` runs one on PostgreSQL (``pending``); None otherwise.
_PENDING: contextvars.ContextVar[set[QueueKey] | None] = contextvars.ContextVar(
    "zq_wake_pending", default=None)
# Queues per NOTIFY statement of the notifier.
NOTIFY_BATCH = 200


def applies_to(dialect: str) -> bool:
    """Whether a backend of ``dialect`` sends and hears wake-ups."""
    return dialect == "postgresql"


@contextlib.contextmanager
def pending() -> Iterator[set[QueueKey]]:
    """Collect the queues the transaction run inside wakes (``Database``, PostgreSQL)."""
    woken: set[QueueKey] = set()
    token = _PENDING.set(woken)
    try:
        yield woken
    finally:
        _PENDING.reset(token)


def after_commit(conn: sa.Connection, pairs: Iterable[QueueKey]) -> None:
    """Note queues to wake once ``conn``'s transaction has committed (``Database``)."""
    woken = _PENDING.get()
    if woken is not None:
        woken.update(pairs)


def notify_events(conn: sa.Connection, rows: Iterable[Mapping[str, Any]]) -> None:
    """Note the queues these event rows wake, for after the commit (PostgreSQL)."""
    if _PENDING.get() is None:
        return
    decoded = [
        # Only a move's detail is read (its destination): the others wake by kind.
        {**row, "detail": None if row["kind"] in WAKING_KINDS else load_json(row["detail"])}
        for row in rows
    ]
    after_commit(conn, woken_queues(decoded))


class Notifier:
    """Sends the NOTIFYs of committed changes, from a thread and a connection of its own."""

    def __init__(self, engine: sa.Engine) -> None:
        self._engine = engine
        self._pending: dict[QueueKey, None] = {}
        self._lock = threading.Lock()
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: Any = None
        self.sent = 0  # queues notified (tests)

    def send(self, pairs: Iterable[QueueKey]) -> None:
        """NOTIFY these queues soon; returns at once."""
        with self._lock:
            self._pending.update(dict.fromkeys(pairs))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="zq wake-up notifier",
                                                daemon=True)
                self._thread.start()
        self._wanted.set()

    def close(self) -> None:
        self._stop.set()
        self._wanted.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)

    def _run(self) -> None:
        delay = FIRST_RETRY
        while True:
            self._wanted.wait()
            self._wanted.clear()
            with self._lock:
                batch, self._pending = list(self._pending), {}
            if batch:
                try:
                    self._notify_once_more_if_lost(batch)
                    delay = FIRST_RETRY
                except Exception as exc:
                    # Those waiters learn of it from the re-check.
                    log.warning("PostgreSQL wake-ups: NOTIFY of %d queue(s) failed (%s)",
                                len(batch), exc)
                    self._drop()
                    self._stop.wait(delay)
                    delay = min(delay * 2, LAST_RETRY)
            if self._stop.is_set():
                self._drop()
                return

    def _notify_once_more_if_lost(self, batch: list[QueueKey]) -> None:
        try:
            self._notify(batch)
        except Exception:
            if self._conn is None:
                raise  # no connection could be made
            # A connection lost while idle (a restart, a failover): a new one.
            self._drop()
            self._notify(batch)

    def _notify(self, batch: list[QueueKey]) -> None:
        if self._conn is None:
            self._conn = _own_connection(self._engine)
            # A notification needs no durable commit: this connection's
            # commits never wait for a disk flush (see the module documentation).
            self._conn.execute("SET synchronous_commit TO off")
        for start in range(0, len(batch), NOTIFY_BATCH):
            chunk = batch[start:start + NOTIFY_BATCH]
            calls = ", ".join(["pg_notify(%s, %s)"] * len(chunk))
            self._conn.execute(f"SELECT {calls}",
                               [value for project, queue in chunk
                                for value in (CHANNEL, wake_name(project, queue))])
            self.sent += len(chunk)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


def _own_connection(engine: sa.Engine) -> Any:
    """A psycopg connection made as the pool makes them (host list, timeouts, TLS), autocommit.

    Detached from the pool: it belongs to the caller's thread alone.
    """
    raw = engine.raw_connection()
    conn = raw.driver_connection
    raw.detach()
    try:
        conn.autocommit = True
    except BaseException:
        conn.close()
        raise
    return conn


class PostgresWakeListener(ThreadedListener):
    """LISTEN zq_wake on one connection of the engine's own settings."""

    name = "PostgreSQL wake-ups"

    def __init__(self, engine: sa.Engine, wake: WakeCallback,
                 wake_all: Callable[[], None] | None) -> None:
        super().__init__(wake, wake_all)
        self._engine = engine

    def connect(self) -> Any:
        conn = _own_connection(self._engine)
        try:
            conn.execute(f"LISTEN {CHANNEL}")
        except BaseException:
            conn.close()
            raise
        return _Session(conn)

    def receive(self, session: Any, timeout: float) -> list[QueueKey]:
        conn = session.conn
        heard = list(conn.notifies(timeout=timeout, stop_after=1))
        if heard:
            heard += conn.notifies(timeout=0)
            session.quiet_since = time.monotonic()
        elif time.monotonic() - session.quiet_since > KEEPALIVE_SECONDS:
            conn.execute("SELECT 1")  # raises on a dead connection
            session.quiet_since = time.monotonic()
        return [key for key in (parse_wake_name(n.payload) for n in heard
                                if n.channel == CHANNEL) if key is not None]

    def disconnect(self, session: Any) -> None:
        # Already broken, say: then there is nothing to release.
        with contextlib.suppress(Exception):
            session.conn.close()


class _Session:
    def __init__(self, conn: Any) -> None:
        self.conn = conn  # a psycopg.Connection
        self.quiet_since = time.monotonic()

