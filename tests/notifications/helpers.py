"""A fake subscription store, a local webhook receiver, a notifier on one storage."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from zq.clock import Clock
from zq.config import NotificationsConfig
from zq.errors import SubscriptionNotFound
from zq.notifications.pump import Report, fetcher
from zq.notifications.runner import Notifier
from zq.storage.base import Storage


@dataclass
class FakeSubscription:
    """SubscriptionRecord's shape (the subscription API's record)."""

    id: str
    project: str
    queue: str
    subscriber: str
    ttl: int = 3600
    expires: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)
    confirmed: bool = True
    age: float = 0.0


class FakeSubscriptions:
    def __init__(self) -> None:
        self.records: list[FakeSubscription] = []

    def live(self) -> list[FakeSubscription]:
        return list(self.records)

    def get(self, project: str, queue: str, subscription_id: str) -> FakeSubscription:
        for record in self.records:
            if (record.id, record.project, record.queue) == (subscription_id, project, queue):
                return record
        raise SubscriptionNotFound.gone(subscription_id)

    def add(self, sub_id: str, project: str, queue: str, subscriber: str,
            **options: Any) -> FakeSubscription:
        record = FakeSubscription(sub_id, project, queue, subscriber, options=options)
        self.records.append(record)
        return record


def attach(storage: Storage) -> FakeSubscriptions:
    """Give ``storage`` a fake subscription store (until the API's controller is merged)."""
    existing = getattr(storage, "subscriptions", None)
    if isinstance(existing, FakeSubscriptions):
        return existing
    fake = FakeSubscriptions()
    storage.subscriptions = fake  # type: ignore[attr-defined]
    return fake


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    peer: tuple[str, int] = ("", 0)  # the client's address: one per connection

    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    """A local HTTP server that records every POST and answers ``status``."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.status = 200
        self.statuses: dict[str, int] = {}  # by path
        self.redirect: str | None = None
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real webhook servers

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                receiver.received.append(
                    Received(self.path, dict(self.headers), body, self.client_address))
                if receiver.redirect and self.path == "/redirect":
                    self.send_response(307)
                    self.send_header("Location", receiver.redirect)
                else:
                    self.send_response(receiver.statuses.get(self.path, receiver.status))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def on(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]


@contextmanager
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def config(port: int | None = None, **changes: Any) -> NotificationsConfig:
    settings: dict[str, Any] = {"allowed_hosts": f"127.0.0.1:{port}" if port else "",
                                "settle_seconds": 0.0, "timeout": 5.0}
    settings.update(changes)
    return NotificationsConfig(**settings)


class Counts:
    def __init__(self) -> None:
        self.sent = 0
        self.failed = 0

    def __call__(self, report: Report) -> None:
        if report.sent:
            self.sent += 1
        else:
            self.failed += 1


def notifier(storage: Storage, clock: Clock, settings: NotificationsConfig,
             owner: str = "server-a", counts: Counts | None = None) -> Notifier:
    return Notifier(lambda: {"default": storage}, settings, clock,
                    fetch_for=lambda s: fetcher(s, None),
                    report=counts or Counts(), owner=owner)


def drain(*notifiers: Notifier, rounds: int = 50) -> None:
    """Tick until no notifier has work ready (steps run on their threads)."""
    import time

    for _ in range(rounds):
        for n in notifiers:
            n.tick()
        deadline = time.monotonic() + 10
        while any(n._running for n in notifiers) and time.monotonic() < deadline:
            time.sleep(0.005)
            for n in notifiers:
                n._collect()
        if not any(n.busy() for n in notifiers):
            return
