"""A workload through the real SQL driver (SQLite), exported and analysed by Spark.

Poison messages exhaust ``_max_claim_count`` and land in the dead letter
queue; the job must find exactly the deletes and dead letters that happened.
"""

from __future__ import annotations

import json

import pytest

from tests.analytics.recount import recount
from tests.analytics.test_stats import assert_same, stats
from zq.analytics.export import backend_id, export, read_state
from zq.clock import ManualClock
from zq.events import fingerprint
from zq.poison.dead_letter import policy_from_metadata
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import NewMessage
from zq.storage.sql import open_sql

pytestmark = pytest.mark.slow

MAX_CLAIMS = 2
POISON = 5
HEALTHY = 20


def message(body: str) -> NewMessage:
    return NewMessage(body=body, ttl=3600, delay=0, fingerprint=fingerprint(body))


def drive(storage, clock: ManualClock) -> dict[str, int]:
    """Post, consume, fail the poison ones; returns what really happened."""
    project = "e2e"
    metadata = {"_max_claim_count": MAX_CLAIMS, "_dead_letter_queue": "jobs-dlq"}
    storage.queues.create(project, "jobs", metadata)
    policy = policy_from_metadata(metadata)
    bodies = [f'{{"poison":{i}}}' for i in range(POISON)] + [
        f'{{"n":{i}}}' for i in range(HEALTHY)]
    storage.messages.post(project, "jobs", [message(b) for b in bodies], client_id="producer")
    happened = {"deleted": 0, "released": 0, "expired": 0, "dlq_deleted": 0}
    turn = 0
    while True:
        turn += 1
        worker = f"worker-{turn % 2}"
        claim = storage.claims.create(project, "jobs", ttl=60, grace=60, limit=4,
                                      client_id=worker, rules=DeliveryRules(dead_letter=policy))
        if claim is None:
            break
        poison_held = 0
        for held in claim.messages:
            if '"poison"' in held.body:
                poison_held += 1
            else:
                storage.messages.delete(project, "jobs", held.id, claim_id=claim.id,
                                        client_id=worker)
                happened["deleted"] += 1
        if poison_held and turn % 2:
            storage.claims.release(project, "jobs", claim.id, client_id=worker)
            happened["released"] += poison_held
        elif poison_held:
            clock.advance(61)  # let the claim lapse
            storage.gc()
            happened["expired"] += poison_held
        clock.advance(1)
    # An operator drains two dead letters.
    claim = storage.claims.create(project, "jobs-dlq", ttl=60, grace=60, limit=2,
                                  client_id="operator")
    for held in claim.messages:
        storage.messages.delete(project, "jobs-dlq", held.id, claim_id=claim.id,
                                client_id="operator")
        happened["dlq_deleted"] += 1
    happened["dead_lettered"] = storage.queues.stats(project, "jobs-dlq").total + 2
    return happened


def test_sql_workload_exported_and_analysed_finds_exactly_what_happened(spark, tmp_path):
    clock = ManualClock()
    uri = f"sqlite:///{tmp_path}/zq.sqlite3"
    storage = open_sql(uri, clock=clock)
    dataset = str(tmp_path / "events")
    try:
        happened = drive(storage, clock)
        logged = storage.events.read(limit=100_000)
        name = backend_id(uri)
        first = export({name: storage}, dataset, batch_size=50)
        assert first[0].events == len(logged)
        assert storage.events.read() == []  # trimmed
        # A second run finds nothing new; the cursor stays.
        assert export({name: storage}, dataset)[0].events == 0
        assert read_state(dataset)["backends"][name]["cursor"] == logged[-1].cursor
    finally:
        storage.close()

    code, out, _ = stats(spark, "--events", dataset, "--format", "json")
    assert code == 0
    printed = json.loads(out)
    totals = {r["queue"]: r for r in printed["queue_totals"]}
    assert happened["dead_lettered"] == POISON
    assert totals["jobs"]["dead_lettered"] == POISON
    assert totals["jobs"]["deleted"] == happened["deleted"] == HEALTHY
    assert totals["jobs-dlq"]["deleted"] == happened["dlq_deleted"] == 2
    assert totals["jobs"]["posted"] == POISON + HEALTHY
    distribution = {(r["queue"], r["outcome"], r["claims"]): r["messages"]
                    for r in printed["claims_distribution"]}
    assert distribution[("jobs", "dead_lettered", MAX_CLAIMS)] == POISON
    assert printed["failing_fingerprints"][0]["dead_letters"] == 1
    assert {r["fingerprint"] for r in printed["failing_fingerprints"]} == {
        fingerprint(f'{{"poison":{i}}}') for i in range(POISON)}
    consumers = {r["client_id"]: r for r in printed["consumers"]}
    workers = [consumers["worker-0"], consumers["worker-1"]]
    assert sum(c["released"] for c in workers) == happened["released"] > 0
    assert sum(c["expired"] for c in workers) == happened["expired"] > 0
    assert sum(c["deleted"] for c in workers) == HEALTHY
    # And every figure agrees with a recount of what the driver logged.
    assert_same(printed, recount(logged, backend=name))
