"""Two projects' queues of the same name stay two queues in every table (issue 25, item 20).

``shop-a`` and ``shop-b`` both have ``orders`` (dead letter queue
``orders-dlq``); the same poison body and the same description fail in
both, with message ids that repeat across the projects. The plain engine
runs here (fast); the Spark test checks Spark's tables equal to it.
"""

from __future__ import annotations

import io
import json

import pytest

from tests.analytics.conftest import zq_parser
from tests.analytics.recount import recount
from tests.analytics.recount_advice import signature_id
from tests.analytics.test_stats import assert_same
from tests.analytics.test_trend_buckets import exported
from zq.analytics import advice, job, plain
from zq.storage.records import Event

T = 1_700_006_400.0
POISON = '{"card":null}'


def shop(project: str, poison: int, healthy: int, start: float) -> list[Event]:
    """``poison`` messages rejected then dead lettered, ``healthy`` ones deleted."""
    out: list[Event] = []

    def e(at: float, kind: str, message: str, **fields) -> None:
        out.append(Event(cursor="", time=start + at, project=project,
                         queue=fields.pop("queue", "orders"), kind=kind, message_id=message,
                         **fields))

    for n in range(poison):
        m, at = f"m{n}", 100.0 * n
        e(at, "posted", m, detail={"ttl": 60, "delay": 0, "fingerprint": "fp-card"})
        e(at + 1, "claimed", m, claim_id=f"c{n}", client_id="worker", claim_count=1)
        e(at + 2, "rejected", m, claim_id=f"c{n}", client_id="worker", claim_count=1,
          detail={"description": "KeyError: 'card'", "retry_after": None})
        e(at + 3, "claimed", m, claim_id=f"d{n}", client_id="worker", claim_count=2)
        e(at + 4, "dead_lettered", m, claim_id=f"d{n}", client_id="worker", claim_count=2,
          detail={"to": "orders-dlq", "reason": "rejected", "fingerprint": "fp-card",
                  "sample": POISON, "description": "KeyError: 'card'"})
    for n in range(poison, poison + healthy):
        m, at = f"m{n}", 100.0 * n
        e(at, "posted", m, detail={"ttl": 60, "delay": 0, "fingerprint": f"fp-{n}"})
        e(at + 1, "claimed", m, claim_id=f"c{n}", client_id="worker", claim_count=1)
        e(at + 5, "deleted", m, claim_id=f"c{n}", client_id="worker", claim_count=1)
    e(5000, "redriven", "m0", queue="orders-dlq",
      detail={"to": "orders", "reason": "redriven", "fingerprint": "fp-card",
              "sample": POISON})
    return out


def two_shops() -> list[Event]:
    return shop("shop-a", poison=3, healthy=2, start=T) + shop("shop-b", 1, 4, T + 50)


def stats(*argv: str) -> tuple[int, str]:
    args = zq_parser().parse_args(["stats", *argv])
    out = io.StringIO()
    code = job.run(args, out=out, progress=lambda _: None)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def shops(tmp_path_factory) -> tuple[str, list[Event]]:
    events = two_shops()
    return exported(tmp_path_factory.mktemp("shops"), events), events


def test_every_table_matches_the_recount_with_the_projects_apart(shops):
    root, events = shops
    code, out = stats("--events", root, "--format", "json", "--engine", "python")
    assert code == 0
    assert_same(json.loads(out), recount(events))


def test_fingerprints_and_signatures_are_counted_per_project(shops):
    root, _ = shops
    _, out = stats("--events", root, "--format", "json", "--engine", "python")
    printed = json.loads(out)
    assert [(r["project"], r["fingerprint"], r["dead_letters"], r["messages"], r["queues"])
            for r in printed["failing_fingerprints"]] == [
        ("shop-a", "fp-card", 3, 3, "orders"), ("shop-b", "fp-card", 1, 1, "orders")]
    shapes = [r for r in printed["poison_signatures"] if r["by"] == "shape"]
    assert [(r["project"], r["messages"], r["sample_ids"]) for r in shapes] == [
        ("shop-a", 3, "m0,m1,m2"), ("shop-b", 1, "m0")]
    # One id per row: the id names the signature in its project.
    ids = [r["signature_id"] for r in printed["poison_signatures"]]
    assert len(set(ids)) == len(ids) == 4
    assert shapes[1]["signature_id"] == signature_id("shop-b", "shape", "{card:null}")


def test_the_drill_down_of_a_signature_lists_its_project_only(shops):
    root, _ = shops
    wanted = signature_id("shop-b", "description", "KeyError: 'card'")
    code, out = stats("signatures", "--events", root, "--signature", wanted, "--format", "json",
                      "--engine", "python")
    assert code == 0
    assert [(r["project"], r["message_id"]) for r in json.loads(out)["signature_messages"]] == [
        ("shop-b", "m0")]


def test_every_table_that_names_a_queue_names_its_project():
    queue_columns = {"queue", "queues", "dead_letter_queue"}
    tables = {**plain.COLUMNS, plain.DRILL_DOWN[0]: plain.DRILL_DOWN[1], **advice.columns()}
    for name, columns in tables.items():
        if queue_columns & set(columns):
            assert "project" in columns, name


@pytest.mark.slow
def test_spark_keeps_the_projects_apart_as_the_plain_engine_does(spark, shops):
    from tests.analytics.conftest import stats as spark_stats

    root, _ = shops
    for argv in ([], ["signatures"]):
        _, by_spark, _ = spark_stats(spark, *argv, "--events", root, "--format", "json")
        _, by_python = stats(*argv, "--events", root, "--format", "json", "--engine", "python")
        assert json.loads(by_spark) == json.loads(by_python)
