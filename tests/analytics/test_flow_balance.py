"""Every queue's totals add up, on histories made by the real drivers.

A seeded random workload (posts, claims, deletes, releases, lapsed claims,
pops, bulk deletes, dead letter moves, expiry and gc, purges, queue
deletes) runs against each backend with a ManualClock. The known answer is
the backend's own queue stats at the end: for every queue,

    posted + dead_lettered_in = deleted + dead_lettered + expired + purged + present

with ``present`` equal to the messages the queue still holds. The plain
recount (tests/analytics/recount.py) is checked against that answer on every
backend, and Spark's ``queue_totals`` against the recount.
"""

from __future__ import annotations

import io
import json
import random

import pyarrow.dataset as ds
import pytest

from tests.analytics.conftest import zq_parser
from tests.analytics.recount import recount
from tests.backends import backend_name, clock, project, storage, storage_factory
from tests.contract.helpers import new_message
from zq.analytics.export import export
from zq.clock import ManualClock
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.base import Storage
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import Event

__all__ = ["backend_name", "clock", "project", "storage", "storage_factory"]

QUEUES = ("orders", "billing", "mail")
DEAD_LETTER = {"orders": "orders-dlq", "billing": "billing-dlq"}  # mail has none
ALL_QUEUES = (*QUEUES, *DEAD_LETTER.values())


def workload(storage: Storage, project: str, clock: ManualClock, *, seed: int, steps: int = 300
             ) -> None:
    """A random mix of every way a message enters or leaves a queue."""
    rng = random.Random(seed)
    claims: list[tuple[str, str]] = []
    for _ in range(steps):
        queue = rng.choice(ALL_QUEUES)
        policy = (DeadLetterPolicy(max_claim_count=2, queue=DEAD_LETTER[queue])
                  if queue in DEAD_LETTER else None)
        action = rng.random()
        if action < 0.35:
            ttl = rng.choice((60, 600, 3600))
            storage.messages.post(project, queue, [new_message({"n": rng.random()}, ttl=ttl)
                                                   for _ in range(rng.randint(1, 4))],
                                  client_id="producer")
        elif action < 0.60:
            claim = storage.claims.create(project, queue, ttl=30, grace=30,
                                          limit=rng.randint(1, 3), client_id="worker",
                                          rules=DeliveryRules(dead_letter=policy))
            if claim is not None:
                claims.append((queue, claim.id))
                for message in claim.messages:
                    if rng.random() < 0.5:
                        storage.messages.delete(project, queue, message.id, claim_id=claim.id,
                                                client_id="worker")
        elif action < 0.70 and claims:
            queue, claim_id = claims.pop(rng.randrange(len(claims)))
            storage.claims.release(project, queue, claim_id, client_id="worker")
        elif action < 0.76:
            storage.messages.pop(project, queue, limit=rng.randint(1, 2), client_id="popper",
                                 rules=DeliveryRules(dead_letter=policy))
        elif action < 0.81:
            listed = storage.messages.list(project, queue, include_claimed=True, limit=3)
            storage.messages.delete_many(project, queue, [m.id for m in listed],
                                         client_id="admin")
        elif action < 0.84:
            storage.queues.purge(project, queue)
        elif action < 0.86:
            storage.queues.delete(project, queue)
        elif action < 0.93:
            clock.advance(rng.choice((5, 40, 120)))  # claims lapse, some messages expire
        else:
            storage.gc()
    storage.gc()  # collect what expired, so the backend's stats are the truth


def exported_events(root, project: str) -> list[Event]:
    table = ds.dataset(str(root), format="parquet", partitioning="hive").to_table()
    rows = sorted((r for r in table.to_pylist() if r["project"] == project),
                  key=lambda r: r["seq"])
    return [Event(cursor=r["cursor"], time=r["time"], project=r["project"], queue=r["queue"],
                  kind=r["kind"], message_id=r["message_id"], claim_id=r["claim_id"],
                  client_id=r["client_id"], claim_count=r["claim_count"],
                  detail=json.loads(r["detail"]) if r["detail"] else {})
            for r in rows]


def run_and_export(storage: Storage, project: str, clock: ManualClock, root, seed: int
                   ) -> tuple[list[Event], dict[str, int]]:
    workload(storage, project, clock, seed=seed)
    export({"b": storage}, str(root), now=lambda: clock.now() + 3600)
    truth = {queue: storage.queues.stats(project, queue).total for queue in ALL_QUEUES}
    return exported_events(root, project), truth


@pytest.mark.parametrize("seed", [1, 2])
def test_the_recount_balances_every_queue_against_the_backend(storage, project, clock,
                                                              tmp_path, seed):
    events, truth = run_and_export(storage, project, clock, tmp_path, seed)
    totals = {row["queue"]: row for row in recount(events)["queue_totals"]}
    assert sum(row["purged"] for row in totals.values()) > 0  # the workload purged something
    assert sum(row["dead_lettered_in"] for row in totals.values()) > 0
    for queue in ALL_QUEUES:
        row = totals.get(queue)
        if row is None:
            assert truth[queue] == 0
            continue
        assert row["present"] == truth[queue], (queue, row)
        assert row["unaccounted"] == 0, (queue, row)


@pytest.mark.slow
def test_spark_queue_totals_match_the_recount_and_balance(spark, storage, project, clock,
                                                          tmp_path):
    from zq.analytics.job import run

    events, truth = run_and_export(storage, project, clock, tmp_path, seed=3)
    # Only queue_totals is checked here, so only it is computed: the --sql
    # view is the very DataFrame the table is printed from (the other tables
    # are compared with the recount in test_stats, on every case at once).
    args = zq_parser().parse_args(["stats", "--events", str(tmp_path), "--project", project,
                                   "--format", "json", "--sql", "SELECT * FROM queue_totals"])
    out = io.StringIO()
    assert run(args, spark=spark, out=out, progress=lambda _m: None) == 0
    printed = json.loads(out.getvalue())["sql"]
    assert printed == pytest.approx(recount(events)["queue_totals"])
    assert printed  # every queue of the workload, in the table's order
    for row in printed:
        assert row["unaccounted"] == 0 and row["present"] == truth[row["queue"]], row
