"""Redis's wake-ups of waiting claims: PUBLISH from the scripts, one SUBSCRIBE per worker.

Publishing. A script whose events may make a message of a queue claimable
(the rule of zq.storage.wake_events, applied by ``event`` in
lua/_lib.lua) publishes ``enc(project) .. queue`` on the channel
``<prefix>:wake``, once per script and queue: a post of 10 messages, a
release of a claim on 10, a redrive of 100 each publish once. Inside the
script, so a subscriber hears it only once the change is made (a script
that refused, STALE or a mismatch, publishes nothing), and PUBLISH to a
channel nobody hears costs Redis a lookup.

Why pub/sub and not keyspace notifications: those need the server's
``notify-keyspace-events`` setting (which managed Redis services often
refuse to change), fire for every write of every key (each claim and delete
too), and name keys by queue id, which a listener would have to map back
to queues; a PUBLISH says exactly "this queue may have a message now".

On a Redis Cluster the channel is the same (the scripts of every home
``<prefix>:{b}:`` publish on ``<prefix>:wake``), and a PUBLISH reaches the
subscribers of every node.

Listening. Each worker subscribes on one connection of the storage's own
client (its pool: TLS, password, Sentinel's current master, a node of the
cluster) for all its waiters, and hears every queue's wake-ups, which it reports to its waiting
machinery (zq.storage.wakeups). After the connection is lost (a restart, a
failover: Sentinel closes the pub/sub clients of a demoted master) it
subscribes again, on the master of the moment, and wakes every waiter
once. A connection quiet for KEEPALIVE_SECONDS is sent a PING; one that
does not answer within PING_SECONDS is dropped and made again, so a server
gone without closing its connections (a cut network) is noticed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import redis

from zq.storage.wake_events import parse_wake_name
from zq.storage.wake_listener import ThreadedListener
from zq.storage.wakeups import QueueKey, WakeCallback

CHANNEL = "wake"  # after the prefix: lua/_lib.lua's ``wake``
# Seconds the subscription's confirmation may take.
SUBSCRIBE_SECONDS = 5.0
KEEPALIVE_SECONDS = 15.0
PING_SECONDS = 5.0
_PING = "zq-wake-keepalive"


def channel(prefix: str) -> str:
    """The wake channel of the keys under ``prefix`` (ending in ':')."""
    return prefix + CHANNEL


class RedisWakeListener(ThreadedListener):
    """SUBSCRIBE ``<prefix>:wake`` on one connection of ``client``'s pool."""

    name = "Redis wake-ups"

    def __init__(self, client: redis.Redis, prefix: str, wake: WakeCallback,
                 wake_all: Callable[[], None] | None) -> None:
        super().__init__(wake, wake_all)
        self._client = client
        self._channel = channel(prefix)

    def connect(self) -> Any:
        pubsub = self._client.pubsub()
        try:
            pubsub.subscribe(self._channel)
            # Heard from the confirmation on: wait for it, so that the
            # waiters woken next miss nothing published after.
            deadline = time.monotonic() + SUBSCRIBE_SECONDS
            while True:
                message = pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()))
                if message is not None and message["type"] == "subscribe":
                    break
                if time.monotonic() >= deadline:
                    raise redis.TimeoutError(f"no confirmation of SUBSCRIBE {self._channel}")
        except BaseException:
            pubsub.close()
            raise
        return _Session(pubsub)

    def receive(self, session: Any, timeout: float) -> list[QueueKey]:
        pubsub = session.pubsub
        heard: list[QueueKey] = []
        message = pubsub.get_message(timeout=timeout)
        while message is not None:
            session.quiet_since = time.monotonic()
            session.ping_sent = None
            if message["type"] == "message":
                key = parse_wake_name(message["data"])
                if key is not None:
                    heard.append(key)
            # Whatever else has already arrived, without waiting.
            message = pubsub.get_message(timeout=0)
        now = time.monotonic()
        if session.ping_sent is not None:
            if now - session.ping_sent > PING_SECONDS:
                raise redis.TimeoutError(f"no answer to PING within {PING_SECONDS:g} s")
        elif now - session.quiet_since > KEEPALIVE_SECONDS:
            pubsub.ping(_PING)
            session.ping_sent = now
        return heard

    def disconnect(self, session: Any) -> None:
        # Already broken, say: then there is nothing to release.
        with contextlib.suppress(Exception):
            session.pubsub.close()


class _Session:
    def __init__(self, pubsub: Any) -> None:
        self.pubsub = pubsub
        self.quiet_since = time.monotonic()
        self.ping_sent: float | None = None
