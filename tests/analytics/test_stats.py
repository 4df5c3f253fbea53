"""The Spark job against a plain-Python recount of the same events (real PySpark)."""

from __future__ import annotations

import base64
import json
import re

import pyarrow.parquet as pq
import pytest

from tests.analytics.conftest import ONE_QUEUE_TOP, PROJECT_WINDOW, PROJECT_WINDOW_SECONDS, stats
from tests.analytics.recount import recount

pytestmark = pytest.mark.slow


def assert_same(printed: dict, expected: dict) -> None:
    assert sorted(printed) == sorted(expected)
    for name, rows in expected.items():
        assert len(printed[name]) == len(rows), name
        for got, want in zip(printed[name], rows, strict=True):
            assert got.keys() == want.keys(), name
            for key, value in want.items():
                if isinstance(value, float):
                    assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-9), (name, key)
                else:
                    assert got[key] == value, (name, key, got, want)


def test_every_figure_matches_the_recount(spark_figures, dataset):
    _, events = dataset
    code, out, said = spark_figures
    assert code == 0
    printed = json.loads(out)
    assert_same(printed, recount(events))
    assert f"{len(events):,} events selected" in said
    assert any(s.startswith("computing consumers") for s in said)


def test_edge_cases_are_classified_as_documented(spark, dataset):
    root, _ = dataset
    _, out, _ = stats(spark, "--events", root, "--format", "json", "--project", "edge-project")
    printed = json.loads(out)
    consumers = {r["client_id"]: r for r in printed["consumers"]}
    assert consumers["slowpoke"] == {
        "client_id": "slowpoke", "deliveries": 3, "claims": 3, "deleted": 0, "released": 0,
        "rejected": 0,
        "expired": 2, "expired_claims": 2}  # k1 (popped after), k3 (dead lettered); k7 open
    assert consumers["ghost"]["expired_claims"] == 1 and consumers["ghost"]["deliveries"] == 0
    assert consumers["bulk"]["deleted"] == 0 and consumers["bulk"]["expired"] == 0
    assert consumers["quick"]["deleted"] == 1
    distribution = {(r["outcome"], r["claims"]): r["messages"]
                    for r in printed["claims_distribution"]}
    assert distribution == {("deleted", 2): 1, ("deleted", 1): 2, ("dead_lettered", 1): 1}
    assert printed["failing_fingerprints"] == [{
        "project": "edge-project", "fingerprint": "fp-e3", "dead_letters": 1, "messages": 1,
        "queues": "edge", "sample": "[3]"}]
    latency = {r["metric"]: r for r in printed["latency"]}
    assert latency["post_to_dead_letter"]["p50"] == pytest.approx(395.0)


def test_filters_match_a_recount_of_the_filtered_events(spark_run, dataset):
    root, events = dataset
    # --until names 05:20Z; the window is [since, until) in seconds.
    since, until = PROJECT_WINDOW_SECONDS
    _, out, _ = spark_run("--events", root, "--format", "json", *PROJECT_WINDOW)
    chosen = [e for e in events
              if e.project == "project-1" and since <= e.time < until]
    assert_same(json.loads(out), recount(chosen))

    _, out, _ = spark_run("--events", root, "--format", "json", *ONE_QUEUE_TOP)
    chosen = [e for e in events if e.queue == "queue-0"]
    assert_same(json.loads(out), recount(chosen, top=3))


def test_sql_queries_the_registered_views(spark, dataset):
    root, events = dataset
    code, out, _ = stats(
        spark, "--events", root, "--format", "csv", "--sql",
        "SELECT outcome, count(*) AS n FROM lifecycles GROUP BY outcome ORDER BY outcome")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0] == "outcome,n"
    got = dict(line.split(",") for line in lines[1:])
    assert int(got["deleted"]) == len({(e.project, e.message_id) for e in events
                                       if e.kind == "deleted"})
    _, out, _ = stats(spark, "--events", root, "--format", "json", "--sql",
                      "SELECT sum(dead_lettered) AS n FROM queue_totals")
    assert json.loads(out) == {"sql": [{"n": sum(e.kind == "dead_lettered" for e in events)}]}
    code, _, _ = stats(spark, "--events", root, "--sql", "SELECT * FROM no_such_view")
    assert code == 2


@pytest.fixture(scope="module")
def report_run(spark, dataset, tmp_path_factory):
    """One ``--out`` run in the table format: (exit code, what it printed, the directory)."""
    root, _ = dataset
    where = tmp_path_factory.mktemp("report")
    code, out, _ = stats(spark, "--events", root, "--out", str(where), "--top", "5")
    return code, out, where


def test_out_writes_tables_charts_and_one_html_report(report_run, dataset):
    _, events = dataset
    code, out, tmp_path = report_run
    assert code == 0 and "== queue_totals" in out
    for name in ("queue_totals", "queue_trend", "claims_distribution", "latency",
                 "failing_fingerprints", "poison_signatures", "consumers", "dead_letter_rate"):
        assert (tmp_path / f"{name}.csv").read_text().count("\n") >= 2
        assert pq.read_table(tmp_path / f"{name}.parquet").num_rows >= 1
    page = (tmp_path / "report.html").read_text()
    images = re.findall(r"src='data:image/png;base64,([^']+)'", page)
    charts = ("claims_per_message", "trend", "latency_percentiles",
              "flow_per_queue", "redrive_outcomes")
    assert len(images) == len(charts)
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    posted_all = sum(e.kind == "posted" for e in events)
    assert f"{posted_all:,} posted" in page  # the headline summary
    assert page.count("what the columns mean") == 11  # definitions under every table
    for chart in charts:
        assert (tmp_path / f"{chart}.png").read_bytes().startswith(b"\x89PNG")
    posted = sum(e.kind == "posted" for e in events)
    totals = pq.read_table(tmp_path / "queue_totals.parquet").column("posted").to_pylist()
    assert sum(totals) == posted


def test_table_format_prints_every_table(report_run):
    # The --out run prints in the default format, the table format.
    _, out, _ = report_run
    assert re.findall(r"^== (\w+)", out, re.M) == [
        "queue_totals", "queue_trend", "claims_distribution", "latency",
        "failing_fingerprints", "poison_signatures", "consumers", "dead_letter_rate",
        "rejections", "dead_letters_by_reason", "redrive_outcomes"]


def test_missing_dataset_is_a_clear_error(spark, tmp_path, capsys):
    code, _, _ = stats(spark, "--events", str(tmp_path / "nothing-here"))
    assert code == 1
    assert "cannot read events" in capsys.readouterr().err
