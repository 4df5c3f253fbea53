"""``[redis] wait_replicas``: a write is acknowledged only once enough replicas have it.

The test Redis has no replica, so WAIT 1 never confirms: every write script
answers StorageUnavailable (a 503) after the timeout, though the script ran,
and reads do not wait at all.
"""

from __future__ import annotations

import time

import pytest

from tests.drivers.redis.helpers import message
from zq.clock import ManualClock
from zq.config import RedisConfig
from zq.errors import StorageUnavailable
from zq.storage.redis import open_redis, sending
from zq.storage.redis.scripts import NOT_CONFIRMED


def test_a_write_no_replica_confirmed_is_a_503_that_says_it_may_have_happened(
    redis_uri: str, clock: ManualClock
) -> None:
    settings = RedisConfig(wait_replicas=1, wait_timeout=0.05)
    waiting = open_redis(redis_uri, clock=clock, settings=settings)
    plain = open_redis(redis_uri, clock=clock)
    try:
        plain.queues.create("p", "wait", {})
        started = time.monotonic()
        with pytest.raises(StorageUnavailable) as unconfirmed:
            waiting.messages.post("p", "wait", [message(1)], client_id="c")
        assert time.monotonic() - started < 5
        assert unconfirmed.value.description == NOT_CONFIRMED
        assert "0 of 1 replicas" in unconfirmed.value.detail
        # The script ran: the master has the message.
        assert plain.queues.stats("p", "wait").total == 1
        # Reads do not wait for replicas.
        assert waiting.queues.stats("p", "wait").total == 1
        assert len(waiting.messages.list("p", "wait", include_claimed=True, echo=True)) == 1
    finally:
        waiting.close()
        plain.close()


def test_without_wait_replicas_no_wait_is_sent(redis_uri: str, clock: ManualClock,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    storage = open_redis(redis_uri, clock=clock, settings=RedisConfig())
    sent: list[str] = []
    original = sending.round_trip

    def recording(client, commands):
        sent.extend(str(command[0]).upper() for command in commands)
        return original(client, commands)

    monkeypatch.setattr(sending, "round_trip", recording)
    try:
        storage.queues.create("p", "nowait", {})
        storage.messages.post("p", "nowait", [message(1)], client_id="c")
    finally:
        storage.close()
    assert "WAIT" not in sent and "EVALSHA" in sent
