"""zq.metrics: the event tail, its stores, the per-queue gauges (no HTTP)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zq.clock import ManualClock
from zq.config import Config, ConfigError, MetricsConfig
from zq.metrics.gauges import QueueGauges
from zq.metrics.registry import DEAD_LETTER_REASONS, Metrics
from zq.metrics.tail import SETTLE, EventTail, FileTailStore, MemoryTailStore, TailState
from zq.storage.records import Event, QueueStats


class FakeEvents:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.fail = False

    def add(self, time: float, kind: str, queue: str = "q", **fields) -> None:
        self.events.append(Event(str(len(self.events) + 1), time, "p", queue, kind, **fields))

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        if self.fail:
            raise ConnectionError("down")
        start = int(after or 0)
        return self.events[start:start + limit]


class FakeQueues:
    def __init__(self) -> None:
        self.reads = 0

    def stats(self, project: str, queue: str) -> QueueStats:
        self.reads += 1
        return QueueStats(free=int(queue.removeprefix("q") or 1), claimed=0)

    def get_metadata(self, project: str, queue: str) -> dict:
        return {}


class FakeStorage:
    def __init__(self) -> None:
        self.events = FakeEvents()
        self.queues = FakeQueues()


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def make_tail(clock: ManualClock, storages: dict, store=None, budget: float = 5.0):
    metrics = Metrics(MetricsConfig())
    store = store or MemoryTailStore(clock.now())
    return metrics, EventTail(metrics, lambda: storages, clock, store, budget=budget), store


def test_events_before_the_start_are_not_counted_but_name_queues() -> None:
    clock = ManualClock(1000.0)
    storage = FakeStorage()
    storage.events.add(900.0, "posted", queue="old", message_id="a")
    metrics, tail, store = make_tail(clock, {"": storage})
    storage.events.add(1000.0, "posted", message_id="b")
    clock.advance(SETTLE)
    tail.run_once()
    assert value(metrics, "zq_messages_posted_total") == 1
    assert {key.split("\x1f")[2] for key in store.snapshot().queues} == {"old", "q"}


def test_an_event_younger_than_the_settle_time_waits_for_the_next_scrape() -> None:
    clock = ManualClock(1000.0)
    storage = FakeStorage()
    metrics, tail, _ = make_tail(clock, {"": storage})
    storage.events.add(1000.0, "posted", message_id="a")
    storage.events.add(1001.0, "posted", message_id="b")
    clock.advance(SETTLE + 0.5)  # the first settled, the second not yet
    tail.run_once()
    assert value(metrics, "zq_messages_posted_total") == 1
    clock.advance(1)
    tail.run_once()
    assert value(metrics, "zq_messages_posted_total") == 2  # each once


def test_post_to_delete_latency_and_dead_letter_reasons() -> None:
    clock = ManualClock(1000.0)
    storage = FakeStorage()
    metrics, tail, _ = make_tail(clock, {"": storage})
    storage.events.add(1000.0, "posted", message_id="a")
    storage.events.add(1030.0, "deleted", message_id="a")
    storage.events.add(1031.0, "dead_lettered", message_id="b",
                       detail={"to": "dlq", "reason": "max_claim_count"})
    clock.advance(100)
    tail.run_once()
    assert value(metrics, "zq_message_post_to_delete_seconds_sum") == 30
    assert value(metrics, "zq_messages_dead_lettered_total", reason="max_claim_count") == 1


def test_a_failing_backend_does_not_stop_the_others() -> None:
    clock = ManualClock(1000.0)
    down, up = FakeStorage(), FakeStorage()
    down.events.fail = True
    metrics, tail, _ = make_tail(clock, {"a": down, "b": up})
    up.events.add(1000.0, "claimed", message_id="x", client_id="c")
    clock.advance(SETTLE)
    assert tail.run_once()
    assert value(metrics, "zq_messages_claimed_total") == 1


def test_one_worker_tails_at_a_time(tmp_path) -> None:
    FileTailStore.create(tmp_path, 1000.0)
    first, second = FileTailStore(tmp_path), FileTailStore(tmp_path)
    with first.locked() as state:
        assert state is not None
        with second.locked() as other:
            assert other is None
        state.cursors["pool"] = "42"
    with second.locked() as state:
        assert state is not None and state.cursors == {"pool": "42"}  # saved by the first


def test_gauges_report_the_most_active_queues_up_to_the_cap_and_cache() -> None:
    clock = ManualClock(1000.0)
    storage = FakeStorage()
    state = TailState(0.0, queues={
        f"\x1fp\x1fq{n}": {"active": float(n), "consumers": {}} for n in range(1, 6)})
    config = MetricsConfig(max_queues=2, cache_seconds=60)
    gauges = QueueGauges(config, lambda: state, lambda: {"": storage}, clock)
    families = {f.name: f for f in gauges.collect()}
    reported = {s.labels["queue"] for s in families["zq_queue_messages"].samples}
    assert reported == {"q5", "q4"}
    counted = {s.labels["state"]: s.value for s in families["zq_metrics_queues"].samples}
    assert counted == {"reported": 2, "omitted": 3}
    reads = storage.queues.reads
    gauges.collect()
    assert storage.queues.reads == reads  # cached


def test_same_named_queues_of_two_projects_add_up_without_project_labels() -> None:
    clock = ManualClock(1000.0)
    storage = FakeStorage()
    state = TailState(0.0, queues={
        "\x1fa\x1fq3": {"active": 1.0, "consumers": {"c1": 999.0}},
        "\x1fb\x1fq3": {"active": 2.0, "consumers": {"c2": 999.0}}})
    gauges = QueueGauges(MetricsConfig(cache_seconds=0), lambda: state,
                         lambda: {"": storage}, clock)
    families = {f.name: f for f in gauges.collect()}
    free = [s.value for s in families["zq_queue_messages"].samples
            if s.labels["state"] == "free"]
    assert free == [6]
    assert [s.value for s in families["zq_queue_consumers"].samples] == [2]


def test_a_budget_of_zero_is_refused() -> None:
    with pytest.raises(ConfigError, match="budget_seconds"):
        Config().with_overrides(metrics={"budget_seconds": 0})


def test_docs_name_every_series_and_every_dead_letter_reason() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    rows = {match.group(1): match.group(0)
            for match in re.finditer(r"^\| `(zq_\w+)` \|.*$", doc, re.M)}
    metrics = Metrics(MetricsConfig())
    names = {family.name + ("_total" if family.type == "counter" else "")
             for family in metrics.registry.collect()}
    assert names - set(rows) == set()
    dead_lettered = rows["zq_messages_dead_lettered_total"]
    assert [r for r in DEAD_LETTER_REASONS if f'reason="{r}"' not in dead_lettered] == []


WORKER = """
import sys
from zq.config import MetricsConfig
from zq.metrics.registry import Metrics

metrics = Metrics(MetricsConfig(), multiprocess_dir=sys.argv[1])
metrics.claims_waiting.inc(int(sys.argv[2]))
metrics.claim_wakeups.inc(int(sys.argv[2]))
print("ready", flush=True)
sys.stdin.read()  # alive until the test closes stdin
"""

SCRAPE = """
import sys
from zq.config import MetricsConfig
from zq.metrics.registry import Metrics

sys.stdout.write(Metrics(MetricsConfig(), multiprocess_dir=sys.argv[1]).render().decode())
"""


def test_waiting_claims_are_summed_over_the_live_workers_only(tmp_path) -> None:
    # Worker processes of one server write to one directory; a scrape sums
    # the waiting gauge of the workers alive, and the wake-ups of all, the
    # ended one too (a counter keeps its counts).
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), str(n)],
                                cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True) for n in (3, 5)]
    try:
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready"

        def scrape() -> dict[str, float]:
            text = subprocess.run([sys.executable, "-c", SCRAPE, str(tmp_path)], cwd=root,
                                  capture_output=True, text=True, check=True).stdout
            return {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
                    if line.startswith(("zq_claims_waiting ", "zq_claim_wakeups_total "))}

        assert scrape() == {"zq_claims_waiting": 8.0, "zq_claim_wakeups_total": 8.0}
        workers[1].communicate("", timeout=30)  # this worker ends (as a crash would)
        assert scrape() == {"zq_claims_waiting": 3.0, "zq_claim_wakeups_total": 8.0}
        assert not list(tmp_path.glob(f"gauge_live*_{workers[1].pid}.db"))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.communicate("", timeout=30)
