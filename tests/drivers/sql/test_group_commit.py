"""Group commit: concurrent writes share one transaction, each keeps its own outcome.

A first write holds the lead (its work waits on an event) while others
queue behind it; released, the queued ones run as one group. Nothing here
sleeps for timing: the test waits until the writes are seen in line.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import exc

from tests.contract.helpers import new_message
from zq.config import ConfigError, SqlConfig
from zq.errors import QueueNotFound, StorageUnavailable
from zq.storage.sql import SqlStorage
from zq.storage.sql.schema import messages, queues


@pytest.fixture
def grouped(sql_storage: SqlStorage, clock) -> Iterator[SqlStorage]:
    """A second storage on the same engine, with group commit on."""
    store = SqlStorage(sql_storage.engine, clock, settings=SqlConfig(group_commit=True))
    yield store
    if store._db.notifier is not None:  # the engine is sql_storage's, closed with it
        store._db.notifier.close()


class Line:
    """Writes started in threads behind a first one that holds the lead."""

    def __init__(self, store: SqlStorage) -> None:
        self.store = store
        self.group = store._db.group
        assert self.group is not None
        self.release = threading.Event()
        self.threads: list[threading.Thread] = []
        self.outcomes: dict[str, Any] = {}
        self.sizes: list[int] = []
        self.group.before_commit = self.sizes.append

        def hold(conn: sa.Connection) -> None:
            assert self.release.wait(30)

        self.start("first", lambda: store._db.write(hold))
        self._until(lambda: self.group._leading)

    def start(self, name: str, call: Callable[[], Any]) -> None:
        def run() -> None:
            try:
                self.outcomes[name] = call()
            except BaseException as error:
                self.outcomes[name] = error

        thread = threading.Thread(target=run)
        thread.start()
        self.threads.append(thread)

    def queue(self, calls: dict[str, Callable[[], Any]]) -> None:
        for name, call in calls.items():
            self.start(name, call)
        self._until(lambda: len(self.group._waiting) == len(calls))

    def finish(self) -> dict[str, Any]:
        self.release.set()
        for thread in self.threads:
            thread.join(30)
        return self.outcomes

    @staticmethod
    def _until(condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 10
        while not condition():
            assert time.monotonic() < deadline, "the writes never queued"
            time.sleep(0.001)


def stored_ids(store: SqlStorage, project: str) -> set[str]:
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(messages.c.id).where(messages.c.project == project))
        return {row.id for row in rows}


def failing_after_a_write(project: str) -> Callable[[sa.Connection], None]:
    """A unit of work that inserts a queue row, then fails (as a zq error would)."""

    def work(conn: sa.Connection) -> None:
        conn.execute(sa.insert(queues).values(
            project=project, name="doomed", metadata="{}", created=0.0, metadata_version="v"))
        raise QueueNotFound.gone("doomed")

    return work


def test_queued_writes_share_one_commit_and_keep_their_own_results(grouped, sql_storage):
    project = f"p-{uuid.uuid4().hex}"
    line = Line(grouped)
    line.queue({
        f"post{n}": (lambda n=n: grouped.messages.post(
            project, "q", [new_message({"n": n})], client_id="c"))
        for n in range(4)
    })
    outcomes = line.finish()
    assert line.sizes == [4]  # the four posts: one transaction, one COMMIT
    posted = {outcomes[f"post{n}"][0] for n in range(4)}
    assert len(posted) == 4
    assert stored_ids(sql_storage, project) == posted


def test_a_failing_unit_rolls_back_to_its_savepoint_only(grouped, sql_storage):
    project = f"p-{uuid.uuid4().hex}"
    line = Line(grouped)
    line.queue({
        "before": lambda: grouped.messages.post(project, "q", [new_message()], client_id="c"),
        "failing": lambda: grouped._db.write(failing_after_a_write(project)),
        "after": lambda: grouped.messages.post(project, "q", [new_message()], client_id="c"),
    })
    outcomes = line.finish()
    assert line.sizes == [3]
    assert isinstance(outcomes["failing"], QueueNotFound)
    assert stored_ids(sql_storage, project) == {outcomes["before"][0], outcomes["after"][0]}
    with sql_storage.engine.connect() as conn:
        doomed = conn.execute(sa.select(queues.c.name).where(
            queues.c.project == project, queues.c.name == "doomed")).all()
    assert doomed == []  # its own write went with its savepoint


def test_a_lost_race_runs_every_unit_again_on_its_own(grouped, sql_storage):
    project = f"p-{uuid.uuid4().hex}"
    attempts: list[int] = []

    def loses_once(conn: sa.Connection) -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise exc.OperationalError("UPDATE", {}, Exception("database is locked"))
        return "won"

    line = Line(grouped)
    line.queue({
        "post": lambda: grouped.messages.post(project, "q", [new_message()], client_id="c"),
        "racer": lambda: grouped._db.write(loses_once),
    })
    outcomes = line.finish()
    assert line.sizes == []  # the group was rolled back, never committed
    assert outcomes["racer"] == "won" and len(attempts) == 2
    assert stored_ids(sql_storage, project) == {outcomes["post"][0]}  # once, not twice


def test_no_unit_is_answered_success_when_the_shared_commit_fails(grouped, sql_storage):
    project = f"p-{uuid.uuid4().hex}"

    class CommitLost(Exception):
        pass

    line = Line(grouped)

    def fail(size: int) -> None:
        line.sizes.append(size)
        raise CommitLost

    line.group.before_commit = fail
    line.queue({
        f"post{n}": (lambda: grouped.messages.post(project, "q", [new_message()], client_id="c"))
        for n in range(3)
    })
    outcomes = line.finish()
    assert line.sizes == [3]
    assert all(isinstance(outcomes[f"post{n}"], CommitLost) for n in range(3))
    assert stored_ids(sql_storage, project) == set()


def test_a_connection_lost_at_the_shared_commit_answers_every_unit_503(grouped, sql_storage):
    # As a lone write answers: StorageUnavailable (503), never the driver's
    # raw error (500); and never run again, as the COMMIT's outcome is unknown.
    project = f"p-{uuid.uuid4().hex}"
    line = Line(grouped)
    runs: list[int] = []

    def lose_connection(size: int) -> None:
        runs.append(size)
        raise exc.OperationalError("COMMIT", None, Exception("server closed the connection"))

    line.group.before_commit = lose_connection
    line.queue({
        f"post{n}": (lambda: grouped.messages.post(project, "q", [new_message()], client_id="c"))
        for n in range(3)
    })
    outcomes = line.finish()
    assert runs == [3]  # one shared attempt, no unit run again on its own
    assert all(isinstance(outcomes[f"post{n}"], StorageUnavailable) for n in range(3))
    assert stored_ids(sql_storage, project) == set()


def test_a_lone_write_takes_the_plain_path(grouped, sql_storage):
    project = f"p-{uuid.uuid4().hex}"
    sizes: list[int] = []
    grouped._db.group.before_commit = sizes.append
    posted = grouped.messages.post(project, "q", [new_message()], client_id="c")
    assert sizes == []  # no shared transaction, no savepoint
    assert stored_ids(sql_storage, project) == set(posted)


def test_claims_and_deletes_in_one_group_never_share_a_message(grouped, sql_storage, clock):
    project = f"p-{uuid.uuid4().hex}"
    posted = sql_storage.messages.post(
        project, "q", [new_message({"n": n}) for n in range(6)], client_id="c")
    line = Line(grouped)
    line.queue({
        f"claim{n}": (lambda: grouped.claims.create(
            project, "q", ttl=60, grace=60, limit=2, client_id="c"))
        for n in range(3)
    })
    outcomes = line.finish()
    assert line.sizes == [3]
    held = [m.id for n in range(3) for m in outcomes[f"claim{n}"].messages]
    assert sorted(held) == sorted(posted)  # each message in exactly one claim


def test_group_commit_is_off_by_default_and_its_window_is_bounded():
    assert SqlConfig().group_commit is False
    with pytest.raises(ConfigError):
        SqlConfig(group_commit_window=1.0)


def test_a_failing_one_statement_unit_fails_alone(grouped, sql_storage):
    """A ``write_statement`` unit has no savepoint: its failure reruns the group unit by unit."""
    project = f"p-{uuid.uuid4().hex}"
    row = dict(project=project, name="taken", metadata="{}", created=0.0, metadata_version="v")
    sql_storage._db.write(lambda conn: conn.execute(sa.insert(queues).values(row)))
    line = Line(grouped)
    line.queue({
        "before": lambda: grouped.messages.post(project, "q", [new_message()], client_id="c"),
        "failing": lambda: grouped._db.write_statement(
            lambda conn: conn.execute(sa.insert(queues).values(row))),
        "after": lambda: grouped.messages.post(project, "q", [new_message()], client_id="c"),
    })
    outcomes = line.finish()
    assert line.sizes == []  # rolled back whole, then each on its own
    assert isinstance(outcomes["failing"], exc.IntegrityError)
    assert stored_ids(sql_storage, project) == {outcomes["before"][0], outcomes["after"][0]}


def test_the_wake_ups_of_a_group_go_out_once_it_committed(grouped, sql_storage):
    """PostgreSQL: the queues a group's posts wake reach the notifier after its COMMIT."""
    notifier = grouped._db.notifier
    if notifier is None:
        pytest.skip("only PostgreSQL sends wake-ups")
    project = f"p-{uuid.uuid4().hex}"
    sent: list[tuple[int, set]] = []
    line = Line(grouped)
    notifier.send = lambda pairs: sent.append((len(line.sizes), set(pairs)))
    line.queue({
        name: (lambda name=name: grouped.messages.post(
            project, name, [new_message()], client_id="c"))
        for name in ("a", "b")
    })
    line.finish()
    assert line.sizes == [2]
    # One send, after the group's COMMIT (sizes was appended before it), naming both queues.
    assert len(sent) == 1 and sent[0][0] == 1
    assert {queue for _project, queue in sent[0][1]} == {"a", "b"}
