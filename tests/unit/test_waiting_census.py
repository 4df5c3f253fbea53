"""zq.metrics.waiting: a server's waiting claims counted across its workers."""

from __future__ import annotations

from zq.config import MetricsConfig
from zq.metrics.registry import Metrics
from zq.metrics.waiting import WaitingCensus


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_one_worker_counts_its_waiters_by_queue_and_client_and_moves_the_metrics():
    metrics = Metrics(MetricsConfig())
    census = WaitingCensus(metrics=metrics)
    census.started("p", "q", "a")
    census.started("p", "q", "a")
    census.started("p", "q", "b")
    census.started("p", "other", "a")
    census.started("p2", "q", "a")
    assert census.waiting("p", "q") == 3
    assert census.clients("p", "q") == {"a": 2, "b": 1}
    census.ended("p", "q", "a")
    census.ended("p", "q", "b")
    census.ended("p", "q", "b")  # ended twice: the second undoes nothing
    assert census.clients("p", "q") == {"a": 1}
    assert metrics.registry.get_sample_value("zq_claims_waiting") == 3
    census.woken("p", 4)
    assert metrics.registry.get_sample_value("zq_claim_wakeups_total") == 4


def test_workers_see_each_others_waiters_through_the_run_directory(tmp_path):
    live = {101, 102}
    clock = Clock()

    def worker(pid: int) -> WaitingCensus:
        return WaitingCensus(str(tmp_path), monotonic=clock, pid=pid,
                             is_alive=lambda p: p in live)

    one, two = worker(101), worker(102)
    one.started("p", "q", "a")
    two.started("p", "q", "b")  # published at once
    two.started("p", "q", "b")  # within publish_every: published by a timer
    clock.now += 0.1
    assert one.clients("p", "q") == {"a": 1, "b": 1}
    assert two.waiting("p", "q") == 3  # its own counts: at once
    two._publish_later()  # what the timer does
    clock.now += 0.1
    assert one.clients("p", "q") == {"a": 1, "b": 1}  # read less than read_every ago
    clock.now += 1.0
    assert one.clients("p", "q") == {"a": 1, "b": 2}
    # A worker that ended (a crash): its waiters no longer count, its file goes.
    live.discard(102)
    clock.now += 1.0
    assert one.clients("p", "q") == {"a": 1}
    assert not (tmp_path / "waiting-102.json").exists()
    one.close()
    assert not (tmp_path / "waiting-101.json").exists()


def test_without_a_directory_only_this_process_counts(tmp_path):
    census = WaitingCensus()
    census.started("p", "q", "a")
    assert census.waiting("p", "q") == 1
    assert census.waiting("p", "nothing") == 0
    census.close()
