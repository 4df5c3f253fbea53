"""SIGKILL ``zq serve`` while a queue's breaker is open, restart it, audit.

Four consumers fail every delivery of a queue with ``_max_claim_count`` 2
(a dependency outage) until its breaker trips; while it is open and the
probes keep failing, the whole server process group is SIGKILLed and
restarted on the same storage. The breaker is still open after the
restart (it lives in the backend, not in a process); the outage then ends,
the probes succeed, the breaker closes. At the end:

- no message was dead lettered for the outage, or every one that was
  (before the trip) was sent back by the auto-redrive: the dead letter
  queue is empty;
- every message was deleted exactly once, none was lost (the event log
  replayed, and what the server lists);
- the probes that failed while it was open were forgiven, not dead
  lettered.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.crash.audit import crash_environment, listed_messages
from tests.crash.outage_load import (
    Deliveries,
    DependencyOutage,
    OutageConsumer,
    audit_every_message_deleted_once,
    breaker_of,
    leftovers,
    skip_without_breaker,
    wait_for,
)
from tests.crash.workload import Target
from tests.e2e.server import ServerProcess, clean_environment
from zq import events
from zq.client import Client
from zq.poison.breaker import CLOSED, OPEN

pytestmark = pytest.mark.slow

MESSAGES = 100
CONSUMERS = 4
CLAIM_TTL = 5
METADATA = {"_max_claim_count": 2, "_dead_letter_queue": "dlq",
            "_breaker_failure_ratio": 0.5, "_breaker_min_failures": 10,
            "_breaker_probe_interval": 1, "_breaker_close_after": 2, "_auto_redrive_max": 1}


def test_sigkill_while_the_breaker_is_open_dead_letters_and_loses_nothing(
        storage_uri: str, tmp_path: Path) -> None:
    skip_without_breaker(storage_uri)
    project = f"crash-breaker-{uuid.uuid4().hex}"
    # A claim the kill cut off (made, its answer lost) lapses after its ttl:
    # 5 s rather than a minute (ZQ_LIMITS_MIN_CLAIM_TTL lowers the floor).
    env = {**crash_environment(clean_environment(tmp_path / "data"), storage_uri),
           "ZQ_LIMITS_MIN_CLAIM_TTL": "5"}

    def start(generation: int) -> ServerProcess:
        return ServerProcess(tmp_path / f"server-{generation}.log", env, "--workers", "2",
                             "--storage", storage_uri).start()

    def state() -> str:
        return breaker_of(storage_uri, project, "work", METADATA).state

    server = start(0)
    target = Target()
    target.set(server.url)
    outage = DependencyOutage()
    ledger = Deliveries()
    consumers = [OutageConsumer(target, project, "work", outage, ledger, terminal=n == 0,
                                claim_ttl=CLAIM_TTL) for n in range(CONSUMERS)]
    try:
        with Client(server.url, project=project) as client:
            client.create_queue("work", METADATA)
            posted: list[str] = []
            for start_at in range(0, MESSAGES, 20):
                posted += client.post("work", *({"n": n} for n in range(start_at, start_at + 20)),
                                      ttl=3600)
        for consumer in consumers:
            consumer.start()
        wait_for(lambda: state() == OPEN, 30, "the breaker to trip")
        time.sleep(1.5)  # probes fail meanwhile
        server.kill()
        target.set(None)
        assert state() == OPEN
        server = start(1)
        target.set(server.url)
        time.sleep(1.5)  # the restarted server's probes fail too
        assert state() == OPEN
        outage.end()
        wait_for(lambda: state() == CLOSED, 30, "the breaker to close")
        with Client(server.url, project=project) as client:
            wait_for(lambda: client.stats("work").total + client.stats("dlq").total == 0, 60,
                     "every message to be deleted",
                     lambda: leftovers(storage_uri, project, ("work", "dlq")))
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
    dead = {e.message_id for e in logged if e.kind == events.DEAD_LETTERED}
    back = {e.message_id for e in logged if e.kind == events.REDRIVEN
            and e.detail["reason"] == "auto_redriven"}
    assert dead == back
    changes = [e for e in logged if e.kind == events.BREAKER]
    states = [(e.detail["previous"], e.detail["state"]) for e in changes]
    assert states[0] == (CLOSED, OPEN) and states[-1][1] == CLOSED
    assert states.count((CLOSED, OPEN)) == 1  # the restart did not forget it and trip again
    # Probes failed while it was open and were forgiven: their messages
    # were deleted in the end (audited above), not dead lettered. Counted
    # in the log's order, the order the steps ran.
    opened, closed = logged.index(changes[0]), logged.index(changes[-1])
    probes_failed = [e for e in logged[opened:closed] if e.kind == events.REJECTED]
    assert probes_failed
