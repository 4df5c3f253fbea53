"""Trend buckets finer than a day when the events span little time (issue 19, item 3).

The plain engine runs here (fast); test_plain_engine.py checks Spark's
tables equal to it on the short history too.
"""

from __future__ import annotations

import dataclasses
import io
import json

import pytest

from tests.analytics.conftest import zq_parser
from tests.analytics.memlog import LogOnlyStorage, MemoryEventLog
from tests.analytics.recount import bucket_of, recount
from zq.analytics import buckets, job
from zq.analytics.export import export
from zq.analytics.synthetic import POISON_WORKFLOW, synthetic_events
from zq.storage.records import Event

START = 1_700_006_400.0  # 2023-11-15T00:00:00Z


def squeezed(span: float, count: int = 1500, seed: int = 5) -> list[Event]:
    """The synthetic workload (3 days, poison workflow on) replayed within ``span`` seconds."""
    events = list(synthetic_events(count, seed=seed, shape=POISON_WORKFLOW))
    first = min(e.time for e in events)
    scale = span / (max(e.time for e in events) - first)
    return [dataclasses.replace(e, time=START + (e.time - first) * scale) for e in events]


def exported(tmp_path, events: list[Event]) -> str:
    export({"a": LogOnlyStorage(MemoryEventLog(events))}, str(tmp_path), batch_size=500)
    return str(tmp_path)


def stats(*argv: str) -> tuple[int, dict, list[str]]:
    args = zq_parser().parse_args(["stats", *argv, "--engine", "python", "--format", "json"])
    out, said = io.StringIO(), []
    code = job.run(args, out=out, progress=said.append)
    return code, json.loads(out.getvalue()) if code == 0 else {}, said


@pytest.mark.parametrize(("span", "width"), [
    (90 * 60, 60),            # an hour and a half: minutes
    (7_199, 60),              # just under 2 hours
    (10 * 3600, 3600),        # ten hours: hours
    (3 * 86400 - 1, 3600),    # just under 3 days
    (3 * 86400, 86400),       # 3 days: days
])
def test_the_bucket_follows_the_events_time_range(tmp_path, span, width):
    events = squeezed(span)
    code, printed, said = stats("--events", exported(tmp_path, events))
    assert code == 0
    assert {r["bucket_seconds"] for r in printed["queue_trend"]} == {width}
    assert printed["queue_trend"] == recount(events)["queue_trend"]
    assert printed["dead_letter_rate"] == recount(events)["dead_letter_rate"]
    assert f"trend buckets of {buckets.describe(width)} (auto" in " ".join(said)


def test_a_short_history_has_a_known_minute_trend(tmp_path):
    """One message a minute for 30 minutes at hh:mm:10; every third is dead lettered."""
    def e(t, kind, message, **fields):
        return Event(cursor="", time=START + t, project="p", queue="q", kind=kind,
                     message_id=message, **fields)

    events = []
    for minute in range(30):
        m = f"m{minute}"
        events += [e(minute * 60 + 10, "posted", m), e(minute * 60 + 20, "claimed", m)]
        events.append(e(minute * 60 + 50, "dead_lettered", m, detail={"to": "q-dlq"})
                      if minute % 3 == 0 else e(minute * 60 + 50, "deleted", m))
    code, printed, _ = stats("--events", exported(tmp_path, events))
    assert code == 0
    trend = [r for r in printed["queue_trend"] if r["queue"] == "q"]
    assert [r["bucket"] for r in trend] == [f"2023-11-15T00:{m:02d}:00Z" for m in range(30)]
    assert all(r["posted"] == 1 and r["claimed"] == 1 for r in trend)
    assert [r["dead_lettered"] for r in trend] == [int(m % 3 == 0) for m in range(30)]
    arrivals = [r for r in printed["queue_trend"] if r["queue"] == "q-dlq"]
    assert [r["dead_lettered_in"] for r in arrivals] == [1] * 10
    rates = printed["dead_letter_rate"]
    assert [r["dead_letter_rate"] for r in rates] == [float(m % 3 == 0) for m in range(30)]


@pytest.mark.parametrize(("given", "width"), [
    ("minute", 60), ("hour", 3600), ("day", 86400), ("15m", 900), ("6h", 21600), ("7d", 604800),
])
def test_an_explicit_bucket_wins(tmp_path, given, width):
    events = squeezed(5 * 3600)
    code, printed, said = stats("--events", exported(tmp_path, events), "--bucket", given)
    assert code == 0
    assert printed["queue_trend"] == recount(events, bucket=width)["queue_trend"]
    assert {r["bucket_seconds"] for r in printed["dead_letter_rate"]} == {width}
    assert "(--bucket)" in " ".join(said)


@pytest.mark.parametrize("given", ["0m", "7m", "-1h", "fortnight", "1.5h", "36h", "1w", ""])
def test_nonsense_buckets_are_refused_in_one_line(given, capsys):
    with pytest.raises(SystemExit) as exit_:
        zq_parser().parse_args(["stats", "--events", "d", "--bucket", given])
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("zq stats: error: argument --bucket: ")


def test_bucket_applies_only_to_the_trend_tables(tmp_path, capsys):
    root = exported(tmp_path, squeezed(3600, count=200))
    code, _, _ = stats("advise", "--events", root, "--bucket", "hour")
    assert code == 2
    assert capsys.readouterr().err == (
        "zq: error: --bucket applies to the trend tables of plain 'zq stats'\n")


def test_bucket_starts_agree_with_the_recount_at_boundaries():
    for t in (START, START + 59.999999, START + 60, START - 0.5, START + 86399.5):
        for width in (60, 900, 3600, 86400, 604800):
            assert buckets.label(buckets.start(t, width)) == bucket_of(t, width), (t, width)
