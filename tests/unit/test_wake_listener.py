"""zq.storage.wake_listener: connect, report, reconnect, wake everyone; the MongoDB stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from zq import events
from zq.poison import moves
from zq.storage import wake_listener
from zq.storage.mongo.wake import PIPELINE, MongoWakeListener
from zq.storage.wake_listener import ThreadedListener
from zq.storage.wakeups import QueueKey

WAIT = 5.0


class Heard:
    def __init__(self) -> None:
        self.keys: list[QueueKey] = []
        self.everyone = 0
        self.changed = threading.Condition()

    def wake(self, project: str, queue: str) -> None:
        with self.changed:
            self.keys.append((project, queue))
            self.changed.notify_all()

    def wake_all(self) -> None:
        with self.changed:
            self.everyone += 1
            self.changed.notify_all()

    def wait_for(self, condition, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(condition, WAIT), what


class Scripted(ThreadedListener):
    """A backend whose connections and batches are given in advance."""

    name = "scripted"

    def __init__(self, heard: Heard, plan: list[Any]) -> None:
        super().__init__(heard.wake, heard.wake_all)
        self.plan = plan  # per connection: an exception, or a list of batches
        self.batches: list[list[QueueKey]] = []
        self.closed = 0

    def connect(self) -> Any:
        step = self.plan.pop(0) if self.plan else []
        if isinstance(step, Exception):
            raise step
        self.batches = list(step)
        return self

    def receive(self, session: Any, timeout: float) -> Iterable[QueueKey]:
        if not self.batches:
            time.sleep(0.01)
            return []
        batch = self.batches.pop(0)
        if isinstance(batch, Exception):
            raise batch
        return batch

    def disconnect(self, session: Any) -> None:
        self.closed += 1


def test_reports_each_queue_of_a_batch_once():
    heard = Heard()
    listener = Scripted(heard, [[[("p", "a"), ("p", "a"), ("p", "b")], [("p", "a")]]]).start()
    try:
        heard.wait_for(lambda: len(heard.keys) == 3, "not reported")
        assert heard.keys == [("p", "a"), ("p", "b"), ("p", "a")]
        assert heard.everyone == 0  # the first connection wakes nobody
    finally:
        listener.close()


def test_a_lost_connection_is_made_again_and_wakes_everyone(monkeypatch):
    monkeypatch.setattr(wake_listener, "FIRST_RETRY", 0.01)
    heard = Heard()
    listener = Scripted(heard, [
        [[("p", "a")], ConnectionError("reset")],
        OSError("refused"), OSError("refused"),
        [[("p", "b")]],
    ]).start()
    try:
        heard.wait_for(lambda: ("p", "b") in heard.keys, "nothing heard after reconnecting")
        assert heard.everyone == 1  # once connected again
        assert listener.reconnects == 1
        assert listener.connected
        assert listener.closed == 1
    finally:
        listener.close()
    assert not listener._thread.is_alive()
    assert listener.closed == 2


def test_close_returns_promptly_while_connecting_fails(monkeypatch):
    monkeypatch.setattr(wake_listener, "FIRST_RETRY", 10.0)
    listener = Scripted(Heard(), [OSError("refused")] * 5).start()
    time.sleep(0.05)
    started = time.monotonic()
    listener.close()
    assert time.monotonic() - started < 1.0
    assert not listener._thread.is_alive()


class FakeStream:
    """pymongo's ChangeStream as documented: try_next() is a change or None."""

    def __init__(self, changes: list[dict[str, Any] | None]) -> None:
        self.changes = changes
        self.closed = False

    def try_next(self) -> dict[str, Any] | None:
        if not self.changes:
            time.sleep(0.01)
            return None
        return self.changes.pop(0)

    def close(self) -> None:
        self.closed = True


class FakeEvents:
    def __init__(self, stream: FakeStream) -> None:
        self.stream = stream
        self.pipelines: list[Any] = []

    def watch(self, pipeline: Any, **options: Any) -> FakeStream:
        self.pipelines.append(pipeline)
        return self.stream


def insert(kind: str, queue: str, detail: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = {"project": "p", "queue": queue, "kind": kind}
    if detail is not None:
        doc["detail"] = detail
    return {"operationType": "insert", "fullDocument": doc}


def test_the_mongodb_stream_reports_what_the_rule_wakes():
    stream = FakeStream([insert(events.POSTED, "a"), None,
                         insert(events.DEAD_LETTERED, "a", moves.dead_lettered("dlq", None).detail),
                         insert(events.CLAIMED, "a")])  # never sent by the server's filter
    database = {"events": FakeEvents(stream)}
    heard = Heard()
    listener = MongoWakeListener(database, heard.wake, heard.wake_all).start()
    try:
        heard.wait_for(lambda: len(heard.keys) == 2 and not stream.changes, "not reported")
        assert heard.keys == [("p", "a"), ("p", "dlq")]
        assert database["events"].pipelines == [PIPELINE]
    finally:
        listener.close()
    assert stream.closed


def test_the_mongodb_filter_keeps_waking_inserts_only():
    match = PIPELINE[0]["$match"]
    assert match["operationType"] == "insert"
    assert set(match["$or"][0]["fullDocument.kind"]["$in"]) == {
        events.POSTED, events.RELEASED, events.REJECTED, events.BREAKER}
    assert match["$or"][1] == {f"fullDocument.detail.{events.TO}": {"$type": "string"}}
