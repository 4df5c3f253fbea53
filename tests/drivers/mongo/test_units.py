"""Events with their change: one transaction where the server has them, right after otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from tests.drivers.mongo.helpers import bodies
from tests.drivers.mongo.session import real_server_url
from zq.storage.mongo.connection import supports_transactions
from zq.storage.mongo.unit import UnitRunner


@pytest.mark.parametrize(
    ("hello", "expected"),
    [
        ({"setName": "rs0", "logicalSessionTimeoutMinutes": 30}, True),
        ({"msg": "isdbgrid", "logicalSessionTimeoutMinutes": 30}, True),
        ({"isWritablePrimary": True, "logicalSessionTimeoutMinutes": 30}, False),
        ({"setName": "rs0"}, False),  # no sessions: too old for transactions
    ],
)
def test_transaction_support_is_read_from_hello(hello, expected):
    assert supports_transactions(lambda name: hello) is expected


def test_a_server_without_hello_has_no_transactions():
    def command(name: str) -> dict[str, Any]:
        raise NotImplementedError("mongomock")

    assert supports_transactions(command) is False


def test_the_path_this_backend_exercises(storage, project):
    """Says which path ran: mongomock and standalone write events after the change."""
    if real_server_url() is None:
        assert storage.transactions is False, "mongomock has no sessions"
    print(f"events written {'in one transaction' if storage.transactions else 'after'} "
          "with their change")
    before = len(storage.events.read(limit=100_000))
    storage.messages.post(project, "q", bodies(2), client_id="c")
    after = storage.events.read(limit=100_000)[before:]
    assert [e.kind for e in after] == ["posted", "posted"]
    assert [int(e.cursor) for e in after] == sorted(int(e.cursor) for e in after)


class _Session:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.log.append("session ended")

    def with_transaction(self, callback: Any) -> Any:
        self.log.append("begin")
        result = callback(self)
        self.log.append("commit")
        return result


class _Client:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def start_session(self) -> _Session:
        return _Session(self.log)


class _Collection:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def find_one_and_update(self, *args: Any, session: Any = None, **kwargs: Any) -> Any:
        self.log.append(f"{self.name} counter in {type(session).__name__}")
        return {"value": 1}

    def insert_many(self, docs: Any, *, session: Any = None, **kwargs: Any) -> None:
        self.log.append(f"{self.name} insert in {type(session).__name__}")


def test_with_transactions_the_events_join_the_changes_transaction():
    log: list[str] = []
    database = {"counters": _Collection(log, "counters"), "events": _Collection(log, "events")}
    runner = UnitRunner(_Client(log), database, transactions=True)

    def change(session: Any) -> tuple[str, list[dict[str, Any]]]:
        log.append(f"change in {type(session).__name__}")
        return "done", [{"kind": "posted"}]

    assert runner.run(change) == "done"
    assert log == ["begin", "change in _Session", "counters counter in _Session",
                   "events insert in _Session", "commit", "session ended"]


def test_without_transactions_the_events_follow_the_change_with_no_session():
    log: list[str] = []
    database = {"counters": _Collection(log, "counters"), "events": _Collection(log, "events")}
    runner = UnitRunner(_Client(log), database, transactions=False)

    def change(session: Any) -> tuple[str, list[dict[str, Any]]]:
        log.append(f"change in {type(session).__name__}")
        return "done", [{"kind": "posted"}]

    assert runner.run(change) == "done"
    assert log == ["change in NoneType", "counters counter in NoneType",
                   "events insert in NoneType"]
