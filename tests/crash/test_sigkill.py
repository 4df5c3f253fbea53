"""SIGKILL ``zq serve`` (master and workers) mid-run, restart it, and audit the storage.

Client threads post, claim, delete, release and (through the queues'
``_max_claim_count``) dead letter messages while the test kills the whole
server process group several times at random moments and restarts it on the
same storage. At the end:

- every post answered 201 is still in a queue or was deleted (its
  ``deleted`` event); every delete answered 204 really happened;
- no message is in two queues;
- no claim outlives its ttl: every live claim expires ttl after it was made,
  and with the clock past ttl + grace nothing is held any more;
- replaying the event log gives exactly the messages, queues and claim
  counts the server lists.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.crash.audit import (
    crash_environment,
    duplicates,
    listed_messages,
    project_events,
    replay,
)
from tests.crash.workload import (
    ALL_QUEUES,
    CLAIM_GRACE,
    CLAIM_TTL,
    Client,
    Ledger,
    Target,
    configure_queues,
)
from tests.e2e.server import ServerProcess, clean_environment
from zq import events
from zq.clock import ManualClock
from zq.errors import ClaimNotFound
from zq.storage import open_storage, scheme_of

pytestmark = pytest.mark.slow
log = logging.getLogger(__name__)

KILLS = 5
# How long each server lives before its SIGKILL: long enough for claims to
# reach _max_claim_count and dead letter (the last assertion checks it).
UP_SECONDS = (1.0, 2.5)
LAST_STRETCH = 2.0  # load on the last server, which is not killed
PRODUCERS = 2
CONSUMERS = 3


def test_sigkill_mid_run_loses_nothing(storage_uri: str, tmp_path: Path) -> None:
    project = f"crash-{uuid.uuid4().hex}"
    env = crash_environment(clean_environment(tmp_path / "data"), storage_uri)
    chance = random.Random()
    started = time.monotonic()

    def start(generation: int) -> ServerProcess:
        server = ServerProcess(tmp_path / f"server-{generation}.log", env,
                               "--workers", "2", "--storage", storage_uri)
        return server.start()

    server = start(0)
    target, ledger, stop = Target(), Ledger(), threading.Event()
    clients: list[Client] = []
    try:
        configure_queues(server.url, project)
        target.set(server.url)
        clients = [Client(role, project, target, ledger, stop, seed)
                   for seed, role in enumerate(["producer"] * PRODUCERS + ["consumer"] * CONSUMERS)]
        for client in clients:
            client.start()
        for generation in range(1, KILLS + 1):
            time.sleep(chance.uniform(*UP_SECONDS))
            server.kill()
            target.set(None)
            server = start(generation)
            target.set(server.url)
        time.sleep(LAST_STRETCH)
    finally:
        stop.set()
        target.set(server.url)  # wake clients waiting for an address
        for client in clients:
            client.join(30)
    failures = [client.failure for client in clients if client.failure is not None]
    try:
        assert not failures, failures
        listed = listed_messages(server.url, project, ALL_QUEUES)
    finally:
        status = server.stop()
    assert status == 0, server.log()

    # The event log against what the server lists and what the clients were told.
    storage = open_storage(storage_uri)
    try:
        log_events = project_events(storage, project)
        fates = replay(log_events)
        claims_made = {}  # claim id -> (queue, time of its first claimed event)
        for event in log_events:
            if event.kind == events.CLAIMED:
                claims_made.setdefault(event.claim_id, (event.queue, event.time))
        held = {}
        for claim_id, (queue, _) in claims_made.items():
            try:
                held[claim_id] = storage.claims.get(project, queue, claim_id)
            except ClaimNotFound:
                continue
    finally:
        storage.close()

    assert duplicates(listed) == [], "a message is in two queues"
    by_id = {m.id: m for m in listed}
    alive = {i: f for i, f in fates.items() if f.alive}
    assert {i: f.queue for i, f in alive.items()} == {i: m.queue for i, m in by_id.items()}
    assert {i: f.claim_count for i, f in alive.items()} == {
        i: m.claim_count for i, m in by_id.items()}
    deleted = {i for i, f in fates.items() if events.DELETED in f.kinds}
    lost = [i for i in ledger.acknowledged if i not in by_id and i not in deleted]
    assert lost == [], f"{len(lost)} acknowledged messages are gone"
    undone = [i for i in ledger.deleted if i in by_id or i not in deleted]
    assert undone == [], f"{len(undone)} acknowledged deletes were undone"
    assert not any(events.EXPIRED in f.kinds or events.PURGED in f.kinds for f in fates.values())

    # No claim outlives its ttl: a live claim ends ttl after it was made...
    for claim_id, claim in held.items():
        assert claim.ttl == CLAIM_TTL and claim.grace == CLAIM_GRACE
        assert claim.expires == pytest.approx(claim.created + CLAIM_TTL, abs=1e-3)
        assert claim.created <= claims_made[claim_id][1] + 1e-3
    # ... and once ttl + grace have passed, nothing is held by anything.
    later = ManualClock(time.time() + CLAIM_TTL + CLAIM_GRACE + 1)
    storage = open_storage(storage_uri, clock=later)
    try:
        for claim_id, (queue, _) in claims_made.items():
            with pytest.raises(ClaimNotFound):
                storage.claims.get(project, queue, claim_id)
        for queue in ALL_QUEUES:
            stats = storage.queues.stats(project, queue)
            assert stats.claimed == 0, (queue, stats)
            assert stats.total == sum(1 for m in listed if m.queue == queue)
    finally:
        storage.close()

    kinds = [event.kind for event in log_events]
    moved = kinds.count(events.DEAD_LETTERED)
    figures = (
        f"crash test on {scheme_of(storage_uri)}: {ledger.requests} requests "
        f"({ledger.transport_errors} cut by a kill, statuses {sorted(ledger.statuses.items())}), "
        f"{KILLS} SIGKILLs survived, {len(fates)} messages checked "
        f"({len(ledger.acknowledged)} acknowledged posts, {len(deleted)} deleted, "
        f"{moved} dead lettered, {len(by_id)} left, {len(held)} claims still live), "
        f"{len(log_events)} events replayed, nothing lost, in {time.monotonic() - started:.0f} s"
    )
    print(figures)
    log.warning(figures)
    # The run did exercise every path it claims to check.
    assert ledger.acknowledged and ledger.deleted and moved > 0
