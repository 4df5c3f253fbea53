"""Rejections, dead letters by reason and redrive outcomes (issue 16 item 8), real PySpark.

The figures of the whole dataset (the synthetic workload with the poison
workflow on) are checked against the plain-Python recount in
test_stats.test_every_figure_matches_the_recount; here the hand-made
histories of synthetic.poison_workflow_events are checked against the
answers known by construction, by Spark and by the recount alike.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.analytics.conftest import ONE_QUEUE_TOP
from tests.analytics.recount import recount
from tests.analytics.test_stats import assert_same
from zq import events as ev
from zq.analytics.schema import event_row
from zq.analytics.synthetic import ADVISOR_WORKER, WORKFLOW_PROJECT, poison_workflow_events
from zq.storage.records import Event

W = WORKFLOW_PROJECT

REJECTIONS = [
    # (rank, description, rejections, retries, terminal, messages)
    (1, "timeout", 9, 9, 0, 4),
    (2, "bad sku", 8, 0, 8, 6),
    (3, "(none)", 2, 2, 0, 2),
]
BY_REASON = {"rejected": (8, 6, 0.5), "max_claim_count": (5, 4, 0.3125),
             "expired": (3, 3, 0.1875)}
OUTCOMES = {"project": W, "queue": "orders", "dead_letter_queue": "orders-dlq",
            "redriven": 12, "messages": 11, "succeeded": 5, "failed_again": 1,
            "died_again": 3, "expired": 1, "pending": 2, "automatic": 2,
            "success_rate": pytest.approx(5 / 9)}


def check_known_answers(tables: dict) -> None:
    rejections = [(r["rank"], r["description"], r["rejections"], r["retries"], r["terminal"],
                   r["messages"]) for r in tables["rejections"] if r["queue"] == "orders"]
    assert rejections == REJECTIONS
    by_reason = {r["reason"]: (r["dead_letters"], r["messages"], r["share"])
                 for r in tables["dead_letters_by_reason"] if r["queue"] == "orders"}
    assert by_reason == BY_REASON
    assert tables["redrive_outcomes"] == [OUTCOMES]
    totals = {r["queue"]: r for r in tables["queue_totals"]}
    assert totals["orders"]["present"] == 3 and totals["orders-dlq"]["present"] == 4
    assert totals["orders"]["redriven_in"] == 12 and totals["orders-dlq"]["redriven"] == 12
    assert totals["orders-dlq"]["dead_lettered_in"] == 16
    assert totals["orders"]["rejected"] == 11  # retry rejects only: terminal ones are moves
    assert all(r["unaccounted"] == 0 for r in totals.values())
    worker = {r["client_id"]: r for r in tables["consumers"]}[ADVISOR_WORKER]
    assert worker["rejected"] == 19  # 11 retry + 8 terminal rejects ended a delivery


def test_the_recount_knows_the_constructed_answers():
    check_known_answers(recount(poison_workflow_events()))


@pytest.mark.slow
def test_spark_finds_the_constructed_answers(spark_run, dataset):
    root, events = dataset
    # The same run as test_plain_engine's comparison of this project (shared).
    code, out, _ = spark_run("--events", root, "--format", "json", "--project", W)
    assert code == 0
    printed = json.loads(out)
    check_known_answers(printed)
    assert_same(printed, recount([e for e in events if e.project == W]))


@pytest.mark.slow
def test_rejections_are_ranked_within_each_queue_and_cut_at_top(spark_run, dataset):
    root, events = dataset
    # One queue (in two projects) with the top lists cut at 3: the run that
    # test_filters_match_a_recount_of_the_filtered_events also checks (shared).
    _, out, _ = spark_run("--events", root, "--format", "json", *ONE_QUEUE_TOP)
    printed = json.loads(out)
    assert_same(printed, recount([e for e in events if e.queue == "queue-0"], top=3))
    ranks = {}
    for row in printed["rejections"]:
        ranks.setdefault((row["project"], row["queue"]), []).append(row["rank"])
    assert len(ranks) == 2 and all(r == list(range(1, len(r) + 1)) and len(r) <= 3
                                   for r in ranks.values())
    assert any(len(r) == 3 for r in ranks.values())
    # Cut, not short: the recount of all their rejections has more descriptions.
    uncut = recount([e for e in events if e.queue == "queue-0"], top=1000)["rejections"]
    assert len(uncut) > len(printed["rejections"])


def test_export_lifts_what_a_reject_carries():
    rejected = Event(cursor="1", time=1.0, project="p", queue="q", kind=ev.REJECTED,
                     message_id="m", claim_id="c", client_id="w", claim_count=2,
                     detail=ev.rejected_detail("KeyError: 'sku'", 30))
    row = event_row("b", 1, rejected)
    assert (row["description"], row["retry_after"]) == ("KeyError: 'sku'", 30)
    backoff = event_row("b", 2, replace(rejected, cursor="2",
                                        detail=ev.rejected_detail(None, None)))
    assert (backoff["description"], backoff["retry_after"]) == (None, None)
    moved = Event(cursor="3", time=1.0, project="p", queue="q-dlq", kind=ev.REDRIVEN,
                  message_id="m", claim_count=3,
                  detail=ev.with_message_sample(ev.moved_detail("q", "redriven"), "fp", "{}"))
    row = event_row("b", 3, moved)
    assert (row["to_queue"], row["reason"], row["fingerprint"]) == ("q", "redriven", "fp")
