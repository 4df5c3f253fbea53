"""A subscribed queue's posted events carry the body: fast consumers still notify it.

Through the service (which decides, with its cache of subscribed queues)
on every driver, with the driver's own subscriptions; the consumer takes
every message before the notifier looks at the log.
"""

from __future__ import annotations

import base64
import os
from typing import Any

import pyarrow.dataset as ds

from tests.notifications.helpers import Counts, config, drain, receiver
from zq import events
from zq.clock import ManualClock
from zq.config import EncryptionConfig, Limits
from zq.encryption import BodyCipher, is_sealed
from zq.notifications.pump import fetcher
from zq.notifications.runner import Notifier
from zq.pooling import SingleBackend
from zq.service import QueueService, subscribed
from zq.storage.base import Storage
from zq.storage.records import Event
from zq.subscriptions import SubscriptionService

SECRET = "card 4111-1111-1111-1111"


def services(storage: Storage, clock: ManualClock,
             cipher: BodyCipher | None = None) -> tuple[QueueService, SubscriptionService]:
    """One process's services: they share its cache, as zq.api.app wires them."""
    queues = QueueService(Limits(), SingleBackend(storage), cipher=cipher, clock=clock)
    subs = SubscriptionService(Limits(), queues.pools, subscribed=queues.subscribed)
    return queues, subs


def post(svc: QueueService, project: str, queue: str, *bodies: Any) -> list[str]:
    return svc.post_messages(project, queue, {"messages": [{"body": b} for b in bodies]},
                             client_id=None, body_size=100)


def consume_all(svc: QueueService, project: str, queue: str) -> None:
    while svc.pop_messages(project, queue, 10, client_id=None):
        pass


def posted(storage: Storage, project: str, queue: str) -> dict[str, Event]:
    return {e.message_id or "": e for e in storage.events.read(limit=100_000)
            if e.project == project and e.queue == queue and e.kind == events.POSTED}


def run_notifier(storage: Storage, clock: ManualClock, port: int,
                 cipher: BodyCipher | None = None) -> None:
    server = Notifier(lambda: {"default": storage}, config(port), clock,
                      fetch_for=lambda s: fetcher(s, cipher), report=Counts(), owner="a")
    drain(server)


def test_a_subscribed_queue_consumed_at_once_notifies_every_body(
        storage: Storage, clock: ManualClock, project: str) -> None:
    queues, subs = services(storage, clock)
    with receiver() as hook:
        clock.advance(3)
        subs.create(project, "fast", {"subscriber": hook.url("/fast"), "ttl": 3600})
        clock.advance(1)
        ids = post(queues, project, "fast", {"n": 1}, "two", [3])
        consume_all(queues, project, "fast")
        assert queues.queue_stats(project, "fast").total == 0  # gone before the notifier
        run_notifier(storage, clock, hook.port)
        assert [r.json() for r in hook.on("/fast")] == [
            {"body": body, "ttl": 3600, "queue_name": "fast", "Message_Type": "Notification"}
            for body in ({"n": 1}, "two", [3])]
        details = posted(storage, project, "fast")
        assert [details[i].detail[events.BODY] for i in ids] == ['{"n":1}', '"two"', "[3]"]


def test_an_unsubscribed_queue_posts_no_body_and_reads_the_backend_once_per_window(
        storage: Storage, clock: ManualClock, project: str) -> None:
    queues, _ = services(storage, clock)
    reads = []
    real = storage.subscriptions.for_queue

    def counted(p: str, q: str) -> Any:
        reads.append(q)
        return real(p, q)

    storage.subscriptions.for_queue = counted  # type: ignore[method-assign]
    try:
        ids = post(queues, project, "quiet", "a") + post(queues, project, "quiet", "b")
        clock.advance(subscribed.SECONDS + 0.1)
        ids += post(queues, project, "quiet", "c")
    finally:
        del storage.subscriptions.for_queue
    assert reads == ["quiet", "quiet"]  # the second post was answered by the cache
    details = posted(storage, project, "quiet")
    for message_id in ids:
        assert events.BODY not in details[message_id].detail
        assert details[message_id].detail[events.SIZE] == 3


def test_another_process_sees_a_new_subscription_within_the_cache_window(
        storage: Storage, clock: ManualClock, project: str) -> None:
    here, subs = services(storage, clock)
    there, _ = services(storage, clock)  # another worker, with its own cache
    post(there, project, "shared", "before")  # caches "no subscription" there
    with receiver() as hook:
        clock.advance(1)
        subs.create(project, "shared", {"subscriber": hook.url("/s"), "ttl": 3600})
        clock.advance(0.5)
        mine = post(here, project, "shared", "here")  # this process forgot at once
        stale = post(there, project, "shared", "window")
        clock.advance(subscribed.SECONDS)
        fresh = post(there, project, "shared", "after")
        details = posted(storage, project, "shared")
        assert details[mine[0]].detail[events.BODY] == '"here"'
        assert events.BODY not in details[stale[0]].detail  # the documented window
        assert details[fresh[0]].detail[events.BODY] == '"after"'
        # Inside the window the notifier reads the queue: the message is there.
        run_notifier(storage, clock, hook.port)
        assert [r.json()["body"] for r in hook.on("/s")] == ["here", "window", "after"]
        # Deleting the subscription stops bodies at once in its process.
        for record in subs.list(project, "shared"):
            subs.delete(project, "shared", record.id)
        gone = post(here, project, "shared", "unsubscribed")
        assert events.BODY not in posted(storage, project, "shared")[gone[0]].detail


def new_key() -> str:
    return base64.b64encode(os.urandom(32)).decode()


def test_an_encrypted_queue_logs_only_ciphertext_and_notifies_the_plaintext(
        storage: Storage, clock: ManualClock, project: str, tmp_path: Any) -> None:
    cipher = BodyCipher.from_config(EncryptionConfig(
        keys=f"k1:{new_key()}", active_key="", fingerprint_key=new_key()))
    assert cipher is not None
    queues, subs = services(storage, clock, cipher)
    queues.create_queue(project, "sealed", {"_enable_encrypt_messages": True})
    with receiver() as hook:
        clock.advance(3)
        subs.create(project, "sealed", {"subscriber": hook.url("/sealed"), "ttl": 3600})
        clock.advance(1)
        ids = post(queues, project, "sealed", {"card": SECRET})
        consume_all(queues, project, "sealed")
        logged = posted(storage, project, "sealed")[ids[0]]
        assert is_sealed(logged.detail[events.BODY])
        everything = repr([e for e in storage.events.read(limit=100_000)
                           if e.project == project])
        assert SECRET not in everything and "card" not in everything
        run_notifier(storage, clock, hook.port, cipher)
        assert [r.json()["body"] for r in hook.on("/sealed")] == [{"card": SECRET}]


def test_the_export_leaves_the_body_out(
        storage: Storage, clock: ManualClock, project: str, tmp_path: Any) -> None:
    from zq.analytics.export import export

    queues, subs = services(storage, clock)
    subs.create(project, "exported", {"subscriber": "http://127.0.0.1:9/x", "ttl": 3600})
    ids = post(queues, project, "exported", {"big": "x" * 200})
    assert events.BODY in posted(storage, project, "exported")[ids[0]].detail
    # Not trimming the log other tests share; past the settle window of
    # logs without final order.
    export({"backend": storage}, str(tmp_path), trim=False, now=lambda: clock.now() + 60)
    table = ds.dataset(str(tmp_path), format="parquet", partitioning="hive").to_table()
    rows = [r for r in table.to_pylist()
            if r["project"] == project and r["message_id"] == ids[0]]
    assert [r["kind"] for r in rows] == [events.POSTED]
    assert rows[0]["size"] == len('{"big":"' + "x" * 200 + '"}')
    assert "xxxx" not in rows[0]["detail"] and '"body"' not in rows[0]["detail"]
