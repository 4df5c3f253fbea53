"""The plain-Python engine (small selections) computes exactly Spark's tables (issue 19 item 4)."""

from __future__ import annotations

import io
import json

import pytest

from tests.analytics.conftest import ONE_QUEUE_TOP, PROJECT_WINDOW, zq_parser
from tests.analytics.recount import recount
from tests.analytics.test_stats import assert_same, stats
from tests.analytics.test_trend_buckets import exported, squeezed
from zq.analytics import job
from zq.analytics.job import run
from zq.analytics.synthetic import WORKFLOW_PROJECT


def plain(*argv: str) -> tuple[int, str, list[str]]:
    """zq stats with spark=None: whatever engine --engine / auto picks, Spark forbidden."""
    args = zq_parser().parse_args(["stats", *argv])
    out, said = io.StringIO(), []
    code = run(args, out=out, progress=said.append)
    return code, out.getvalue(), said


@pytest.fixture
def no_spark(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(job, "spark_session", refuse)


def test_plain_engine_matches_the_recount(dataset, no_spark):
    root, events = dataset
    code, out, said = plain("--events", root, "--format", "json")
    assert code == 0
    assert any("plain Python" in line for line in said)
    assert_same(json.loads(out), recount(events))
    code, out, _ = plain("--events", root, "--format", "json", "--project", "project-1",
                         "--since", "1700060000", "--until", "2023-11-17T05:20:00Z", "--top", "3")
    chosen = [e for e in events if e.project == "project-1"
              and 1_700_060_000.0 <= e.time < 1_700_198_400.0]
    assert_same(json.loads(out), recount(chosen, top=3))


def test_auto_picks_spark_when_the_selection_is_large(dataset, monkeypatch):
    root, events = dataset
    monkeypatch.setattr(job, "PLAIN_MAX_EVENTS", len(events) - 1)
    started = []

    def spark_session(*args, **kwargs):
        started.append(args)
        raise job.SparkMissing("not in this test")

    monkeypatch.setattr(job, "spark_session", spark_session)
    code, _, _ = plain("--events", root)
    assert code == 1 and started
    monkeypatch.setattr(job, "PLAIN_MAX_EVENTS", len(events))
    started.clear()
    code, _, _ = plain("--events", root)
    assert code == 0 and not started


@pytest.mark.parametrize("argv", [["--sql", "SELECT 1"], ["--master", "local[1]"], ["advise"]])
def test_what_needs_spark_gets_spark_or_a_clear_refusal(dataset, monkeypatch, argv, capsys):
    root, _ = dataset
    code, _, _ = plain(*argv, "--events", root, "--engine", "python")
    assert code == 2
    assert "need Spark" in capsys.readouterr().err
    started = []
    monkeypatch.setattr(job, "spark_session", lambda *a, **k: started.append(a) or (
        (_ for _ in ()).throw(job.SparkMissing("not in this test"))))
    plain(*argv, "--events", root)  # auto: Spark
    assert started


@pytest.mark.slow
def test_plain_engine_gives_exactly_sparks_tables(spark, spark_run, dataset, tmp_path):
    root, _ = dataset
    # The selections other tests also run through Spark (spark_run shares
    # them): the whole dataset, a project and a time window, one queue with
    # the top lists cut, the poison workflow's project.
    for argv in ((), PROJECT_WINDOW, ONE_QUEUE_TOP, ("--project", WORKFLOW_PROJECT)):
        _, by_spark, _ = spark_run("--events", root, "--format", "json", *argv)
        code, by_python, _ = plain("--events", root, "--format", "json", "--engine", "python",
                                   *argv)
        assert code == 0
        by_spark, by_python = json.loads(by_spark), json.loads(by_python)
        assert list(by_python) == list(by_spark)
        for name, rows in by_spark.items():
            assert [list(r) for r in by_python[name]] == [list(r) for r in rows], name
        assert_same(by_python, by_spark)
    _, by_spark, _ = stats(spark, "signatures", "--events", root, "--format", "json")
    _, by_python, _ = plain("signatures", "--events", root, "--format", "json",
                            "--engine", "python")
    assert json.loads(by_python) == json.loads(by_spark)
    # A history of 90 minutes: minute buckets (chosen from the time range
    # Spark computes), and an explicit width, in both engines. Only the two
    # trend tables are asked of Spark (--sql): the others are compared above.
    short = exported(tmp_path, squeezed(90 * 60))
    for argv in ([], ["--bucket", "15m"]):
        _, by_python, _ = plain("--events", short, "--format", "json", "--engine", "python",
                                *argv)
        by_python = json.loads(by_python)
        assert by_python["queue_trend"][0]["bucket_seconds"] == (900 if argv else 60)
        for name in ("queue_trend", "dead_letter_rate"):
            _, by_spark, _ = stats(spark, "--events", short, "--format", "json", *argv,
                                   "--sql", f"SELECT * FROM {name}")
            assert by_python[name] == json.loads(by_spark)["sql"], name
    # Tables print the same, with their columns, even when empty.
    _, text_spark, _ = stats(spark, "--events", root, "--queue", "orders", "--format", "csv")
    _, text_python, _ = plain("--events", root, "--queue", "orders", "--format", "csv",
                              "--engine", "python")
    assert text_python == text_spark
