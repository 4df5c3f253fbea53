"""PostgreSQL wake-ups: NOTIFY once the change committed; listener and notifier reconnect.

Read with a plain LISTEN connection: a post of 10 messages is one
notification (on the one-statement path and on the general path), a
transaction that rolls back notifies nobody and one that commits does, and
the notification is sent by the notifier's connection, whose commits do not
wait for the disk; a listener or a notifier whose connection the server
closed connects again (the listener wakes everyone).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
import sqlalchemy as sa

from tests.backends import BACKENDS, selected_backends
from zq import events
from zq.clock import ManualClock
from zq.storage.sql import SqlStorage
from zq.storage.sql import wake as sql_wake
from zq.storage.sql.events import event_row, record
from zq.storage.wake_events import wake_name

PG_BACKENDS = [name for name in selected_backends()
               if name in ("postgresql", "postgresql-general")]
HEAR_SECONDS = 10.0

pytestmark = pytest.mark.skipif(not PG_BACKENDS, reason="no PostgreSQL backend selected")


@pytest.fixture(scope="module", params=PG_BACKENDS)
def pg_factory(request: pytest.FixtureRequest):
    with BACKENDS[request.param]() as factory:
        yield factory


@pytest.fixture
def pg(pg_factory) -> Iterator[SqlStorage]:
    store = pg_factory(ManualClock())
    assert isinstance(store, SqlStorage)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def listening(pg: SqlStorage) -> Iterator[psycopg.Connection]:
    """A plain LISTEN zq_wake connection to the storage's database."""
    url = pg.engine.url.set(drivername="postgresql")
    conn = psycopg.connect(url.render_as_string(hide_password=False), autocommit=True)
    conn.execute(f"LISTEN {sql_wake.CHANNEL}")
    try:
        yield conn
    finally:
        conn.close()


def notified(conn: psycopg.Connection, fence: str) -> list[str]:
    """Every payload notified before ``fence`` (which the caller sent last)."""
    payloads = []
    for notify in conn.notifies(timeout=HEAR_SECONDS):
        if notify.payload == fence:
            return payloads
        payloads.append(notify.payload)
    raise AssertionError(f"never heard {fence!r}")


def post(storage: SqlStorage, project: str, queue: str, count: int = 1) -> None:
    from tests.contract.helpers import post as contract_post

    contract_post(storage, project, queue, count)


def test_a_post_of_ten_is_one_notification(pg, listening):
    post(pg, "p", "q", count=10)
    post(pg, "p", "fence")
    assert notified(listening, wake_name("p", "fence")) == [wake_name("p", "q")]


def test_a_rollback_notifies_nobody_and_a_commit_does(pg, listening):
    def change(conn: sa.Connection, fail: bool) -> None:
        record(conn, [event_row(events.RELEASED, "p", "rolled-back" if fail else "committed",
                                1.0, message_id="m", claim_id="c")])
        if fail:
            raise RuntimeError("the change fails after its NOTIFY")

    with pytest.raises(RuntimeError):
        pg._db.write(lambda conn: change(conn, True))
    pg._db.write(lambda conn: change(conn, False))
    post(pg, "p", "fence")
    assert notified(listening, wake_name("p", "fence")) == [wake_name("p", "committed")]


class Heard:
    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []
        self.connections = 0
        self.changed = threading.Condition()

    def wake(self, project: str, queue: str) -> None:
        with self.changed:
            self.keys.append((project, queue))
            self.changed.notify_all()

    def wake_all(self) -> None:
        with self.changed:
            self.connections += 1
            self.changed.notify_all()

    def wait_for(self, condition, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(condition, HEAR_SECONDS), what


def test_the_listener_listens_again_after_its_connection_is_closed(pg):
    heard = Heard()
    listener = pg.wakeups.listen(heard.wake, heard.wake_all)
    try:
        assert listener.wait_connected(HEAR_SECONDS), "never connected"
        # The server ends the listening session, as a restart or failover would.
        ended = pg._db.read(lambda conn: conn.execute(sa.text(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND query LIKE 'LISTEN%'")).all())
        assert ended == [(True,)]
        heard.wait_for(lambda: heard.connections == 1, "no wake-up of everyone after reconnecting")
        post(pg, "p", "after")
        heard.wait_for(lambda: ("p", "after") in heard.keys, "a post after reconnecting unheard")
    finally:
        listener.close()


def test_a_quiet_listener_checks_its_connection(pg, monkeypatch):
    """After KEEPALIVE_SECONDS without a notification it runs a query: a dead link shows."""
    monkeypatch.setattr(sql_wake, "KEEPALIVE_SECONDS", 0.1)
    heard = Heard()
    listener = pg.wakeups.listen(heard.wake, heard.wake_all)
    try:
        assert listener.wait_connected(HEAR_SECONDS), "never connected"

        def listener_query() -> str | None:
            return pg._db.read(lambda conn: conn.execute(sa.text(
                "SELECT query FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid = :pid"), {"pid": pid}).scalar())

        pid = pg._db.read(lambda conn: conn.execute(sa.text(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND query LIKE 'LISTEN%'")).scalar_one())
        deadline = time.monotonic() + HEAR_SECONDS
        while listener_query() != "SELECT 1":
            assert time.monotonic() < deadline, "the quiet listener never checked"
            time.sleep(0.05)
    finally:
        listener.close()


def test_the_notifier_commits_without_waiting_for_the_disk(pg, listening):
    post(pg, "p", "q")
    notify = next(listening.notifies(timeout=HEAR_SECONDS))
    assert notify.payload == wake_name("p", "q")
    setting = pg._db.read(lambda conn: conn.execute(sa.text(
        "SELECT setting FROM pg_settings WHERE name = 'synchronous_commit'")).scalar())
    assert setting == "on"  # the storage's own connections: durable commits
    notifier = pg._db.notifier._conn
    assert notifier.execute("SHOW synchronous_commit").fetchone() == ("off",)
    assert notify.pid == notifier.info.backend_pid  # not the post's connection


def test_a_notifier_whose_connection_was_closed_connects_again(pg, listening):
    post(pg, "p", "first")
    assert next(listening.notifies(timeout=HEAR_SECONDS)).payload == wake_name("p", "first")
    pid = pg._db.notifier._conn.info.backend_pid
    pg._db.read(lambda conn: conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"),
                                          {"pid": pid}).all())
    post(pg, "p", "second")
    assert next(listening.notifies(timeout=HEAR_SECONDS)).payload == wake_name("p", "second")
    assert pg._db.notifier._conn.info.backend_pid != pid
