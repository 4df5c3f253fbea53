"""Eight consumers on two workers trip the breaker, then close it, and every message is audited.

A real ``zq serve --workers 2``; 8 consumer threads (zq.client, one
Client-ID each) claim from a queue with a breaker. A dependency outage
makes every delivery fail: half the consumers reject for a retry, half
terminally (the handler's "this cannot be fixed", wrong during an outage).
The failures of the 8, recorded by two processes, trip one breaker; the
outage goes on for a few probe intervals (each probe fails), then ends:
probes succeed, the breaker closes, and what was dead lettered before the
trip is sent back by the auto-redrive. The audit, from the event log:

- the breaker went closed -> open -> half-open -> closed, once;
- while it was open, at most one delivery per probe interval;
- every message was deleted exactly once, none is left anywhere: nothing
  the outage touched stayed in the dead letter queue, nothing was lost.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.crash.audit import crash_environment, listed_messages
from tests.crash.conftest import storage_uri
from tests.crash.outage_load import (
    Deliveries,
    DependencyOutage,
    OutageConsumer,
    audit_every_message_deleted_once,
    breaker_of,
    skip_without_breaker,
    wait_for,
)
from tests.crash.workload import Target
from tests.e2e.server import ServerProcess, clean_environment
from zq import events
from zq.client import Client
from zq.poison.breaker import CLOSED, HALF_OPEN, OPEN

__all__ = ["storage_uri"]
pytestmark = pytest.mark.slow

MESSAGES = 200
CONSUMERS = 8
PROBE_INTERVAL = 1
METADATA = {"_max_claim_count": 3, "_dead_letter_queue": "dlq",
            "_breaker_failure_ratio": 0.5, "_breaker_min_failures": 10,
            "_breaker_probe_interval": PROBE_INTERVAL, "_breaker_close_after": 2,
            "_auto_redrive_max": 1}
FAILED_PROBES = 3.0  # seconds of outage after the trip


def test_eight_consumers_on_two_workers_trip_and_close_one_breaker(
        storage_uri: str, tmp_path: Path) -> None:
    skip_without_breaker(storage_uri)
    project = f"breaker-race-{uuid.uuid4().hex}"
    env = crash_environment(clean_environment(tmp_path / "data"), storage_uri)
    server = ServerProcess(tmp_path / "server.log", env, "--workers", "2",
                           "--storage", storage_uri).start()
    target = Target()
    target.set(server.url)
    outage = DependencyOutage()
    ledger = Deliveries()
    consumers = [OutageConsumer(target, project, "work", outage, ledger, terminal=n % 2 == 1)
                 for n in range(CONSUMERS)]
    try:
        with Client(server.url, project=project) as client:
            client.create_queue("work", METADATA)
            posted: list[str] = []
            for start in range(0, MESSAGES, 20):
                posted += client.post("work", *({"n": n} for n in range(start, start + 20)),
                                      ttl=3600)
            for consumer in consumers:
                consumer.start()

            def state() -> str:
                return breaker_of(storage_uri, project, "work", METADATA).state

            wait_for(lambda: state() == OPEN, 30, "the breaker to trip")
            time.sleep(FAILED_PROBES)
            assert state() == OPEN  # every probe failed
            outage.end()
            wait_for(lambda: state() == CLOSED, 30, "the breaker to close")
            wait_for(lambda: client.stats("work").total + client.stats("dlq").total == 0, 60,
                     "every message to be deleted")
        for consumer in consumers:
            consumer.stopping.set()
        for consumer in consumers:
            consumer.join(15)
        listed = listed_messages(server.url, project, ("work", "dlq"))
    finally:
        for consumer in consumers:
            consumer.stopping.set()
        status = server.stop()
    assert status == 0, server.log()
    assert [c.errors for c in consumers] == [[]] * CONSUMERS
    assert listed == []

    logged = audit_every_message_deleted_once(storage_uri, project, posted)
    assert ledger.deleted == Counter(posted)  # each delete the server acknowledged, once

    changes = [e for e in logged if e.kind == events.BREAKER]
    assert [(e.detail["previous"], e.detail["state"]) for e in changes] == [
        (CLOSED, OPEN), (OPEN, HALF_OPEN), (HALF_OPEN, CLOSED)]
    opened, closed = changes[0].time, changes[-1].time
    assert changes[0].detail["description"] == (
        "OperationalError: orders-db unreachable (connection refused)")
    # While open: one probe per interval, not the backlog (which 8 consumers
    # would claim hundreds of times in these seconds). Counted in the log's
    # order, not by event time: an event's time is its worker's clock read
    # before the call was sent, so a claim whose call waited (a loaded
    # machine, [redis] coalesce) can carry a time after the trip's though it
    # ran before it. The log's order is the order the steps ran on Redis and
    # SQLite; on PostgreSQL and MariaDB it is the order of the transactions'
    # first writes, so a claim racing the trip (or the close) can sort inside
    # the open span though it saw the breaker closed: at most one per
    # consumer at each end, each with its own claim id.
    first, last = logged.index(changes[0]), logged.index(changes[-1])
    during = {e.claim_id for e in logged[first:last] if e.kind == events.CLAIMED}
    assert 1 <= len(during) <= (closed - opened) / PROBE_INTERVAL + 2 + 2 * CONSUMERS
    # What was dead lettered before the trip came back, automatically.
    dead = {e.message_id for e in logged if e.kind == events.DEAD_LETTERED}
    back = {e.message_id for e in logged if e.kind == events.REDRIVEN
            and e.detail["reason"] == "auto_redriven"}
    assert dead == back
    held = [e for e in logged if e.kind == events.REJECTED and e.detail.get(events.HELD)]
    assert held  # the terminal rejects while open were held as retries
