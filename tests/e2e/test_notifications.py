"""Notifications from real ``zq serve`` processes: two servers on one backend, and a crash.

Both servers serve one SQLite file (the backend they share); a local HTTP
receiver is the webhook subscriber. Leases are short so that the crash
test's takeover comes quickly.
"""

from __future__ import annotations

import collections
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import ServerProcess, clean_environment
from tests.notifications.helpers import Receiver, receiver

PROJECT = "e2e-notify"


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as server:
        yield server


def environment(tmp_path: Path, hook: Receiver) -> dict[str, str]:
    env = clean_environment(tmp_path / "data")
    env.update({
        "ZQ_STORAGE": f"sqlite:///{tmp_path}/shared.sqlite3",
        "ZQ_NOTIFICATIONS_ALLOWED_HOSTS": f"127.0.0.1:{hook.port}",
        "ZQ_NOTIFICATIONS_POLL_INTERVAL": "0.1",
        "ZQ_NOTIFICATIONS_LEASE_SECONDS": "4",
        "ZQ_NOTIFICATIONS_QUEUE_DEPTH": "5",
        "ZQ_METRICS_ENABLED": "false",
    })
    return env


def headers() -> dict[str, str]:
    return {"Client-ID": str(uuid.uuid4()), "X-Project-ID": PROJECT}


def subscribe(server: ServerProcess, queue: str, subscriber: str) -> str:
    response = httpx.post(f"{server.url}/v2/queues/{queue}/subscriptions", headers=headers(),
                          json={"subscriber": subscriber, "ttl": 3600}, trust_env=False)
    assert response.status_code == 201, response.text
    return response.json()["subscription_id"]


def post(server: ServerProcess, queue: str, *bodies: object) -> None:
    response = httpx.post(f"{server.url}/v2/queues/{queue}/messages", headers=headers(),
                          json={"messages": [{"body": b, "ttl": 3600} for b in bodies]},
                          trust_env=False)
    assert response.status_code == 201, response.text


def wait_for(condition, timeout: float = 90.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def bodies(hook: Receiver, path: str) -> list[object]:
    return [r.json()["body"] for r in hook.on(path)]


def test_two_servers_on_one_backend_deliver_each_event_once_per_subscriber(
        tmp_path: Path, hook: Receiver) -> None:
    env = environment(tmp_path, hook)
    one = ServerProcess(tmp_path / "one.log", env, "--workers", "1").start()
    two = ServerProcess(tmp_path / "two.log", env, "--workers", "1").start()
    try:
        paths = ["/a", "/b", "/c"]
        for path in paths:
            subscribe(one, "orders", hook.url(path))
        for i in range(0, 30, 3):  # posts through both servers
            post(one if i % 2 else two, "orders", i, i + 1, i + 2)
        wait_for(lambda: all(len(hook.on(p)) >= 30 for p in paths))
        time.sleep(3)  # time enough for a duplicate to show up
        for path in paths:
            counts = collections.Counter(bodies(hook, path))
            assert sorted(counts) == list(range(30)) and set(counts.values()) == {1}, path
        # Both notifiers ran (each logged its start).
        assert "notifier" in one.log() and "notifier" in two.log()
    finally:
        one.stop()
        two.stop()


def test_sigkill_mid_delivery_then_restart_delivers_every_notification(
        tmp_path: Path, hook: Receiver) -> None:
    env = environment(tmp_path, hook)
    slow = threading.Event()
    original = hook.server.RequestHandlerClass.do_POST

    def slow_post(handler) -> None:  # type: ignore[no-untyped-def]
        if not slow.is_set():
            time.sleep(0.3)  # a slow subscriber: the crash lands mid-delivery
        original(handler)

    hook.server.RequestHandlerClass.do_POST = slow_post  # type: ignore[method-assign]
    first = ServerProcess(tmp_path / "first.log", env, "--workers", "1").start()
    try:
        subscribe(first, "jobs", hook.url("/jobs"))
        post(first, "jobs", *range(20))
        wait_for(lambda: len(hook.on("/jobs")) >= 3)
    finally:
        first.kill()  # SIGKILL the server, its workers and its notifier
    delivered_before = len(hook.on("/jobs"))
    assert delivered_before < 20
    slow.set()
    second = ServerProcess(tmp_path / "second.log", env, "--workers", "1").start()
    try:
        wait_for(lambda: set(bodies(hook, "/jobs")) == set(range(20)))
        got = bodies(hook, "/jobs")
        assert got[:delivered_before] == list(range(delivered_before))
    finally:
        second.stop()
