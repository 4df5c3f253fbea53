"""zq stats answers what needs no Spark without starting it, and keeps Spark's noise out.

Spark is never started in the fast tests here: ``spark_session`` is
replaced by one that fails the test, except where the selection has events
and Spark is what must come next.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.analytics.conftest import QUICK_JIT, T0, edge_events, zq_parser
from tests.analytics.memlog import LogOnlyStorage, MemoryEventLog
from zq.analytics import job
from zq.analytics.export import export
from zq.analytics.report import TABLE_NAMES


class SparkStarted(Exception):
    """Raised by the stand-in for spark_session."""


@pytest.fixture
def no_spark(monkeypatch):
    """Make starting Spark an error; the list records the attempts."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise SparkStarted

    monkeypatch.setattr(job, "spark_session", refuse)
    return attempts


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("events")
    export({"a": LogOnlyStorage(MemoryEventLog(edge_events()))}, str(root))
    return str(root)


def stats(*argv: str) -> tuple[int, str, list[str]]:
    args = zq_parser().parse_args(["stats", *argv])
    out, said = io.StringIO(), []
    try:
        code = job.run(args, out=out, progress=said.append)
    except SparkStarted:
        code = None
    return code, out.getvalue(), said


def test_a_missing_dataset_is_one_line_and_exit_1(no_spark, tmp_path, capsys):
    code, out, _ = stats("--events", str(tmp_path / "nothing-here"))
    assert code == 1 and out == ""
    err = capsys.readouterr().err.splitlines()
    assert err == [f"zq: error: cannot read events from {tmp_path / 'nothing-here'}: "
                   "it does not exist"]
    assert no_spark == []


def test_a_file_is_not_a_dataset(no_spark, tmp_path, capsys):
    (tmp_path / "events.parquet").write_bytes(b"PAR1")
    code, _, _ = stats("--events", str(tmp_path / "events.parquet"))
    assert code == 1
    assert "is not a directory" in capsys.readouterr().err
    assert no_spark == []


def test_an_empty_dataset_says_no_events_matched(no_spark, tmp_path):
    code, out, _ = stats("--events", str(tmp_path))
    assert code == 0
    assert out == f"no events matched: {tmp_path} holds no exported events\n"
    assert no_spark == []


@pytest.mark.parametrize("argv", [
    ["--queue", "nosuch"],
    ["--project", "nosuch"],
    ["--queue", "edge", "--project", "other-project"],
    # The day partition is there, but no event falls in the window.
    ["--since", str(T0 + 1000), "--until", str(T0 + 2000)],
])
def test_filters_that_match_nothing_are_answered_without_spark(no_spark, small_dataset, argv):
    code, out, _ = stats("--events", small_dataset, *argv)
    assert code == 0
    assert out.startswith("no events matched ") and out.endswith(f" in {small_dataset}\n")
    assert no_spark == []


def test_days_outside_the_dataset_are_pruned_before_reading(no_spark, small_dataset):
    code, out, _ = stats("--events", small_dataset, "--since", "2030-01-01")
    assert code == 0
    assert out == (f"no events matched: {small_dataset} holds no exported events on the "
                   "chosen days\n")


def test_json_without_matches_is_still_json(no_spark, small_dataset, capsys):
    code, out, _ = stats("--events", small_dataset, "--queue", "nosuch", "--format", "json")
    assert code == 0
    assert json.loads(out) == {name: [] for name in TABLE_NAMES}
    assert "no events matched queue 'nosuch'" in capsys.readouterr().err
    _, out, _ = stats("--events", small_dataset, "--queue", "nosuch", "--format", "json",
                      "--sql", "SELECT 1")
    assert json.loads(out) == {"sql": []}


def test_advise_without_matches_is_json_of_the_advice_tables(no_spark, small_dataset):
    code, out, _ = stats("advise", "--events", small_dataset, "--queue", "nosuch",
                         "--format", "json")
    assert code == 0
    assert json.loads(out) == {"advice": [], "advice_claims": [], "advice_backoff": []}


def test_a_selection_with_events_goes_on_to_spark(no_spark, small_dataset):
    events = edge_events()
    code, _, said = stats("--events", small_dataset, "--queue", "edge", "--engine", "spark")
    assert code is None and len(no_spark) == 1  # Spark was asked for
    matching = sum(e.queue == "edge" for e in events)
    assert said[0] == f"{matching:,} events match in 1 files"


def test_a_small_selection_is_counted_without_spark(no_spark, small_dataset):
    code, out, said = stats("--events", small_dataset, "--queue", "edge", "--format", "json")
    assert code == 0 and no_spark == []
    assert "plain Python" in said[1]
    assert json.loads(out)["queue_totals"][0]["queue"] == "edge"


def test_a_full_report_on_a_tiny_dataset_never_imports_pyspark(small_dataset, tmp_path):
    """zq stats as a user runs it: --engine auto decides before Spark, so no JVM starts."""
    root = Path(__file__).resolve().parents[2]
    code = ("import json, sys; from zq.cli import main\n"
            f"status = main(['stats', '--events', {small_dataset!r}, '--out', "
            f"{str(tmp_path)!r}])\n"
            "sys.exit(status or ('pyspark' in sys.modules and 'pyspark was imported'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert "== queue_totals" in done.stdout and (tmp_path / "report.html").exists()


@pytest.mark.slow
def test_spark_noise_stays_out_of_the_terminal(small_dataset):
    """Only zq's own lines on stderr; Spark's log4j and JVM output go to a log file."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        # One table (--sql) is enough: the noise comes with the JVM and each
        # query, not with the number of tables.
        [sys.executable, "-m", "zq", "stats", "--events", small_dataset, "--format", "json",
         "--master", "local[1]", "--sql", "SELECT * FROM queue_totals",
         "--conf", f"spark.driver.extraJavaOptions={QUICK_JIT}"],
        cwd=root, capture_output=True, text=True, timeout=600,
        env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sql"]
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("[zq stats") for line in lines), done.stderr
    log = next(line for line in lines if "its own log: " in line)
    assert not Path(log.split("its own log: ")[1].split(";")[0]).exists()  # removed on success
