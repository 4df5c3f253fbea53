"""Redis wake-ups on the wire: one PUBLISH per script and queue; the listener reconnects.

What the scripts publish is read by a plain SUBSCRIBE here; the listener's
reconnection is tried against a Redis server of this test's own (a spare
loopback port, stopped at the end), killed and started again, and against a
server that stops answering without closing the connection.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.drivers.redis.helpers import post
from tests.failover.servers import Server, _wait, binary, free_ports, require
from zq.clock import ManualClock
from zq.storage.redis import open_redis
from zq.storage.redis import wake as redis_wake
from zq.storage.wake_events import wake_name

HEAR_SECONDS = 10.0


def published(client: redis.Redis, prefix: str) -> Iterator[list[str]]:
    """A subscription to the prefix's wake channel: reading it returns what arrived."""
    pubsub = client.pubsub()
    pubsub.subscribe(redis_wake.channel(prefix))
    assert pubsub.get_message(timeout=HEAR_SECONDS)["type"] == "subscribe"
    return pubsub


def drain(pubsub, fence: str) -> list[str]:
    """Every name published before ``fence`` (which the caller published last)."""
    names = []
    while True:
        message = pubsub.get_message(timeout=HEAR_SECONDS)
        assert message is not None, f"never heard {fence!r}"
        if message["data"] == fence:
            return names
        names.append(message["data"])


def test_one_publish_per_script_and_queue(storage, project, clock):
    pubsub = published(storage.client, storage.prefix)
    try:
        post(storage, project, "q", count=10)
        claimed = storage.claims.create(project, "q", ttl=60, grace=60, limit=10,
                                        client_id="c")
        storage.claims.release(project, "q", claimed.id, client_id=None)  # 10 messages
        post(storage, project, "fence")
        assert drain(pubsub, wake_name(project, "fence")) == [wake_name(project, "q")] * 2
    finally:
        pubsub.close()


def test_a_refused_post_publishes_nothing(storage, project):
    """A post whose metadata version moved (STALE) changes nothing, and says nothing."""
    from zq.errors import MetadataChanged
    from zq.storage.delivery_rules import DeliveryRules

    from .helpers import message

    storage.queues.create(project, "q", {})
    pubsub = published(storage.client, storage.prefix)
    try:
        with pytest.raises(MetadataChanged):
            storage.messages.post(project, "q", [message(0)], client_id=None,
                                  rules=DeliveryRules(metadata_version="gone.0"))
        post(storage, project, "fence")
        assert drain(pubsub, wake_name(project, "fence")) == []
    finally:
        pubsub.close()


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

    def wait_for(self, condition, what: str, timeout: float = HEAR_SECONDS) -> None:
        with self.changed:
            assert self.changed.wait_for(condition, timeout), what


def eventually(condition, what: str, timeout: float = 5.0) -> None:
    """Wait for ``condition``, which nothing signals (the listener's state)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture
def own_redis() -> Iterator[Server]:
    """A Redis server of this test's own on a spare loopback port; killed at the end."""
    require("redis-server")
    (port,) = free_ports(1)
    with tempfile.TemporaryDirectory(prefix="zq-wake-redis-") as directory:
        server = Server("redis", [binary("redis-server"), "--port", str(port),
                                  "--bind", "127.0.0.1", "--dir", directory, "--save", "",
                                  "--appendonly", "no"], Path(directory) / "redis.log")
        server.port = port  # type: ignore[attr-defined]
        server.start()
        try:
            _wait("Redis", lambda: redis.Redis(port=port).ping(), server)
            yield server
        finally:
            with contextlib.suppress(ProcessLookupError):
                if server.process is not None:
                    os.killpg(server.process.pid, signal.SIGCONT)
            server.kill()


def test_the_listener_subscribes_again_after_a_restart_and_wakes_everyone(own_redis):
    storage = open_redis(f"redis://127.0.0.1:{own_redis.port}/0?prefix=wake",
                         clock=ManualClock())
    heard = Heard()
    listener = storage.wakeups.listen(heard.wake, heard.wake_all)
    try:
        assert listener.wait_connected(HEAR_SECONDS), "never connected"
        post(storage, "p", "before")
        heard.wait_for(lambda: ("p", "before") in heard.keys, "the first post unheard")

        own_redis.kill()
        own_redis.start()  # same port, empty: a restart without persistence
        _wait("Redis again", lambda: redis.Redis(port=own_redis.port).ping(), own_redis)
        # Every waiter is woken once the listener is back (it may have missed posts).
        heard.wait_for(lambda: heard.connections == 1, "no wake-up of everyone after reconnecting")
        assert listener.reconnects == 1

        post(open_redis(f"redis://127.0.0.1:{own_redis.port}/0?prefix=wake",
                        clock=ManualClock()), "p", "after")
        heard.wait_for(lambda: ("p", "after") in heard.keys, "a post after the restart unheard")
    finally:
        listener.close()
        storage.close()


def test_a_server_that_stops_answering_is_dropped_and_connected_again(own_redis, monkeypatch):
    """SIGSTOP: the connection stays open but silent; the keepalive PING finds it out."""
    monkeypatch.setattr(redis_wake, "KEEPALIVE_SECONDS", 0.2)
    monkeypatch.setattr(redis_wake, "PING_SECONDS", 0.3)
    monkeypatch.setattr(redis_wake, "SUBSCRIBE_SECONDS", 0.5)
    storage = open_redis(f"redis://127.0.0.1:{own_redis.port}/0?prefix=wake",
                         clock=ManualClock())
    heard = Heard()
    listener = storage.wakeups.listen(heard.wake, heard.wake_all)
    try:
        assert listener.wait_connected(HEAR_SECONDS), "never connected"
        os.killpg(own_redis.process.pid, signal.SIGSTOP)
        eventually(lambda: not listener.connected, "a silent server kept as connected")
        os.killpg(own_redis.process.pid, signal.SIGCONT)
        heard.wait_for(lambda: heard.connections == 1, "not connected again")
        post(storage, "p", "q")
        heard.wait_for(lambda: ("p", "q") in heard.keys, "a post after the pause unheard")
    finally:
        listener.close()
        storage.close()


@pytest.mark.slow
def test_the_listener_follows_a_sentinel_failover_and_wakes_everyone():
    """The master dies; Sentinel promotes the replica; the listener subscribes there."""
    from tests.failover.servers import redis_sentinel_set, sentinel_command

    require("redis-server")
    sentinel_command()
    with redis_sentinel_set() as servers:
        uri = f"{servers.uri}?prefix=wake"
        storage = open_redis(uri, clock=ManualClock())
        heard = Heard()
        listener = storage.wakeups.listen(heard.wake, heard.wake_all)
        try:
            assert listener.wait_connected(HEAR_SECONDS), "never connected"
            post(storage, "p", "before")
            heard.wait_for(lambda: ("p", "before") in heard.keys, "the first post unheard")

            servers.master.kill()
            servers.wait_promoted()
            heard.wait_for(lambda: heard.connections == 1,
                           "no wake-up of everyone after the failover", timeout=30.0)
            assert listener.reconnects == 1
            after = open_redis(uri, clock=ManualClock())
            try:
                post(after, "p", "after")
            finally:
                after.close()
            heard.wait_for(lambda: ("p", "after") in heard.keys, "a post on the new master unheard")
        finally:
            listener.close()
            storage.close()
