"""Fixtures for the analytics tests: one Spark session, one exported dataset."""

from __future__ import annotations

import argparse
import io

import pytest

from tests.analytics.memlog import LogOnlyStorage, MemoryEventLog
from zq.analytics.cli import register
from zq.analytics.export import export
from zq.analytics.synthetic import (
    POISON_WORKFLOW,
    advisor_events,
    poison_workflow_events,
    synthetic_events,
)
from zq.storage.records import Event

# For the short-lived JVMs of the tests: the quick JIT only (C1). Spark's
# JVM otherwise spends much of a short run compiling with C2.
QUICK_JIT = "-XX:TieredStopAtLevel=1"


@pytest.fixture(scope="session")
def spark():
    from zq.analytics.spark import spark_session

    # Two cores on this machine: two local threads. The test datasets are a
    # few thousand events, so a job's cost is planning and scheduling, not
    # data: one shuffle partition, no adaptive re-planning and no
    # whole-stage code generation (nothing to compile per query) take about
    # a tenth off each job's CPU and print the same figures, byte for byte
    # (test_cluster compares them with a cluster on Spark's defaults). The
    # JVM lives for one test run: the quick JIT alone (C1, no C2) halves the
    # CPU of its start and of every job (docs/benchmarks.md, issue 31).
    session = spark_session("local[2]", app_name="zq-tests",
                            conf={"spark.sql.shuffle.partitions": "1",
                                  "spark.sql.adaptive.enabled": "false",
                                  "spark.sql.codegen.wholeStage": "false",
                                  "spark.driver.extraJavaOptions": QUICK_JIT})
    yield session
    session.stop()


def zq_parser() -> argparse.ArgumentParser:
    """The harness standing in for zq/cli.py: a top-level parser that calls register."""
    parser = argparse.ArgumentParser(prog="zq")
    register(parser.add_subparsers(dest="command", required=True))
    return parser


def stats(spark, *argv: str) -> tuple[int, str, list[str]]:
    """``zq stats ARGV`` on ``spark``: (exit code, what it printed, its progress lines)."""
    from zq.analytics.job import run

    args = zq_parser().parse_args(["stats", *argv])
    out, said = io.StringIO(), []
    code = run(args, spark=spark, out=out, progress=said.append)
    return code, out.getvalue(), said


T0 = 1_700_100_000.0  # 2023-11-16T02:13:20Z


def edge_events() -> list[Event]:
    """Hand-made histories for the rules the synthetic workload does not exercise."""

    def e(offset, kind, message=None, **fields):
        return Event(cursor="", time=T0 + offset, project="edge-project",
                     queue=fields.pop("queue", "edge"), kind=kind, message_id=message, **fields)

    posted = {"ttl": 60, "delay": 0, "size": 2}
    return [
        # A claim that lapsed, then a pop: the claim expired; the pop is claim 2.
        e(0, "posted", "e1", client_id="producer", detail={**posted, "fingerprint": "fp-e1"}),
        e(1, "claimed", "e1", claim_id="k1", client_id="slowpoke", claim_count=1),
        e(500, "deleted", "e1", client_id="popper", claim_count=2, detail={"pop": True}),
        # A bulk delete without the claim id.
        e(2, "posted", "e2", client_id="producer", detail={**posted, "fingerprint": "fp-e2"}),
        e(3, "claimed", "e2", claim_id="k2", client_id="bulk", claim_count=1),
        e(4, "deleted", "e2", client_id="admin", claim_count=1),
        # Events without claim_count or fingerprint: fall back to the running
        # count and the posted fingerprint.
        e(5, "posted", "e3", client_id="producer", detail={**posted, "fingerprint": "fp-e3"}),
        e(6, "claimed", "e3", claim_id="k3", client_id="slowpoke"),
        e(400, "dead_lettered", "e3", detail={"to": "edge-dlq", "reason": "max_claim_count",
                                              "sample": "[3]"}),
        # The garbage collector reports a claim whose deliveries are not here.
        e(7, "expired", claim_id="k9", client_id="ghost",
          detail={"target": "claim", "messages": 2}),
        # Claim and delete in the same instant: the log order decides.
        e(8, "posted", "e6", client_id="producer", detail={**posted, "fingerprint": "fp-e6"}),
        e(9, "claimed", "e6", claim_id="k6", client_id="quick", claim_count=1),
        e(9, "deleted", "e6", claim_id="k6", client_id="quick", claim_count=1),
        # Still held when the log ends.
        e(10, "posted", "e7", client_id="producer", detail={**posted, "fingerprint": "fp-e7"}),
        e(11, "claimed", "e7", claim_id="k7", client_id="slowpoke", claim_count=1),
        e(12, "renewed", "e7", claim_id="k7", client_id="slowpoke", claim_count=1),
        e(13, "purged", detail={"messages": 1}),  # e7, the only message left
    ]


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    """(dataset dir, events in log order): the synthetic workload (poison workflow on),
    edge cases, advisor cases, poison workflow cases."""
    log = MemoryEventLog(synthetic_events(3000, seed=21, shape=POISON_WORKFLOW))
    log.append(edge_events())
    log.append(advisor_events())
    log.append(poison_workflow_events())
    events = list(log.events)
    root = tmp_path_factory.mktemp("events")
    export({"a": LogOnlyStorage(log)}, str(root), batch_size=1000)
    return str(root), events


@pytest.fixture(scope="session")
def spark_run(spark):
    """``stats(spark, *argv)``, each distinct ``argv`` run once per session.

    A Spark job costs seconds even on a few thousand events (query planning
    and scheduling, not data), so tests that need the same selection of the
    same dataset share one run: the recount, the plain engine, the
    constructed answers and a standalone cluster are compared with it.
    Callers must not mutate what they get back (strings and a list).
    """
    done: dict[tuple[str, ...], tuple[int, str, list[str]]] = {}

    def run(*argv: str) -> tuple[int, str, list[str]]:
        if argv not in done:
            done[argv] = stats(spark, *argv)
        return done[argv]

    return run


@pytest.fixture(scope="session")
def spark_figures(spark_run, dataset) -> tuple[int, str, list[str]]:
    """``stats(spark, "--events", <dataset>, "--format", "json")``, run once."""
    root, _ = dataset
    return spark_run("--events", root, "--format", "json")


# Selections of ``dataset`` that several tests run through Spark (spark_run
# shares them): a project and a time window cutting lifecycles, one queue
# with the top lists cut, the poison workflow's project.
PROJECT_WINDOW = ("--project", "project-1", "--since", "1700060000",
                  "--until", "2023-11-17T05:20:00Z")
PROJECT_WINDOW_SECONDS = (1_700_060_000.0, 1_700_198_400.0)
ONE_QUEUE_TOP = ("--queue", "queue-0", "--top", "3")
