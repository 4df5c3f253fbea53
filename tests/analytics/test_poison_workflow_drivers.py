"""Rejects, a terminal reject and a redrive through every real driver, exported and counted.

The events the drivers really write (not hand-made ones) must land in the
right tables: rejections by description, dead letters by reason, redrive
outcomes, and the flows that balance. Counted by the plain-Python engine
(no Spark: the engines are compared in test_plain_engine.py) and checked
against the recount of what the driver logged.
"""

from __future__ import annotations

import io
import json

from tests.analytics.conftest import zq_parser
from tests.analytics.recount import recount
from tests.analytics.test_stats import assert_same
from tests.backends import backend_name, clock, storage, storage_factory  # noqa: F401
from zq.analytics.export import export
from zq.analytics.job import run
from zq.events import fingerprint
from zq.poison import moves
from zq.poison.dead_letter import policy_from_metadata
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import NewMessage

P, Q, DLQ = "analytics", "orders", "orders-dlq"
WORKER = "00000000-0000-4000-8000-0000000000b1"


def message(body: str) -> NewMessage:
    return NewMessage(body=body, ttl=3600, delay=0, fingerprint=fingerprint(body))


def test_the_poison_workflow_events_of_a_real_driver(storage, clock, tmp_path):  # noqa: F811
    metadata = {"_max_claim_count": 3, "_dead_letter_queue": DLQ}
    storage.queues.create(P, Q, metadata)
    storage.queues.create(P, DLQ, {})
    policy = policy_from_metadata(metadata)
    storage.messages.post(P, Q, [message(f'{{"n":{i}}}') for i in range(4)], client_id=None)
    clock.advance(1)
    claim = storage.claims.create(P, Q, ttl=60, grace=60, limit=4, client_id=WORKER,
                                  rules=DeliveryRules(dead_letter=policy))
    a, b, c, d = sorted(claim.messages, key=lambda m: m.body)
    storage.messages.reject(P, Q, a.id, claim_id=claim.id, client_id=WORKER,
                            description="timeout", retry_after=0)
    storage.messages.move(P, Q, [b.id], moves.rejected(DLQ, None, "bad sku"),
                          claim_id=claim.id, client_id=WORKER)
    storage.messages.delete(P, Q, c.id, claim_id=claim.id, client_id=WORKER)
    storage.messages.reject(P, Q, d.id, claim_id=claim.id, client_id=WORKER,
                            description=None, retry_after=0)
    clock.advance(10)
    assert storage.messages.move(P, DLQ, [b.id], moves.redriven(Q, 3600),
                                 client_id=None) == [b.id]
    clock.advance(1)
    again = storage.claims.create(P, Q, ttl=60, grace=60, limit=10, client_id=WORKER,
                                  rules=DeliveryRules(dead_letter=policy))
    assert {m.id for m in again.messages} == {a.id, b.id, d.id}
    for held in again.messages:
        storage.messages.delete(P, Q, held.id, claim_id=again.id, client_id=WORKER)
    logged = storage.events.read(limit=10_000)
    dataset = str(tmp_path / "events")
    export({"real": storage}, dataset)

    args = zq_parser().parse_args(["stats", "--events", dataset, "--format", "json",
                                   "--engine", "python"])
    out = io.StringIO()
    assert run(args, out=out, progress=lambda _: None) == 0
    printed = json.loads(out.getvalue())
    assert_same(printed, recount(logged, backend="real"))

    rejections = {r["description"]: (r["retries"], r["terminal"])
                  for r in printed["rejections"]}
    assert rejections == {"timeout": (1, 0), "bad sku": (0, 1), "(none)": (1, 0)}
    assert [(r["queue"], r["reason"], r["dead_letters"])
            for r in printed["dead_letters_by_reason"]] == [(Q, "rejected", 1)]
    [outcome] = printed["redrive_outcomes"]
    assert (outcome["queue"], outcome["dead_letter_queue"], outcome["redriven"],
            outcome["succeeded"]) == (Q, DLQ, 1, 1)
    totals = {r["queue"]: r for r in printed["queue_totals"]}
    assert (totals[Q]["posted"], totals[Q]["rejected"], totals[Q]["dead_lettered"],
            totals[Q]["redriven_in"], totals[Q]["deleted"]) == (4, 2, 1, 1, 4)
    assert (totals[DLQ]["dead_lettered_in"], totals[DLQ]["redriven"]) == (1, 1)
    assert all(r["unaccounted"] == 0 and r["present"] == 0 for r in totals.values())
    worker = {r["client_id"]: r for r in printed["consumers"]}[WORKER]
    assert (worker["rejected"], worker["deleted"], worker["expired"]) == (3, 4, 0)
