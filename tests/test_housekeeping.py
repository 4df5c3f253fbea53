"""The periodic garbage collector, driven without sleeping."""

from __future__ import annotations

import logging
import random

import pytest

from zq.housekeeping import JITTER, GarbageCollector
from zq.pooling.base import PoolDown
from zq.storage.records import Collected


class ScriptedStop:
    """A stop event whose wait() returns at once: False ``rounds`` times, then True."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.waits: list[float] = []
        self.is_set = False

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.waits.append(timeout)
        return self.is_set or len(self.waits) > self.rounds

    def set(self) -> None:
        self.is_set = True


class CountingStorage:
    """Stands in for a Storage: gc() returns (or raises) the scripted results."""

    def __init__(self, *results: int | Exception) -> None:
        self.results = list(results)
        self.calls = 0

    def gc(self) -> Collected:
        self.calls += 1
        result = self.results.pop(0) if self.results else 0
        if isinstance(result, Exception):
            raise result
        return Collected(messages=result)


def test_run_collects_once_per_wait_until_stopped() -> None:
    storage = CountingStorage(3, 0, 5)
    stop = ScriptedStop(rounds=3)
    GarbageCollector(storage, 30.0, stop=stop).run()  # type: ignore[arg-type]
    assert storage.calls == 3
    assert len(stop.waits) == 4  # the fourth wait saw the stop


def test_waits_are_the_interval_with_bounded_jitter() -> None:
    stop = ScriptedStop(rounds=200)
    GarbageCollector(CountingStorage(), 10.0, stop=stop, rng=random.Random(7)).run()  # type: ignore[arg-type]
    low, high = 10.0 * (1 - JITTER), 10.0 * (1 + JITTER)
    assert all(low <= wait <= high for wait in stop.waits)
    assert len(set(stop.waits)) > 100  # jittered, not one fixed value


def test_a_failing_collection_is_logged_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    storage = CountingStorage(RuntimeError("database is locked"), 2)
    stop = ScriptedStop(rounds=2)
    with caplog.at_level(logging.WARNING, logger="zq.housekeeping"):
        GarbageCollector(storage, 1.0, stop=stop).run()  # type: ignore[arg-type]
    assert storage.calls == 2
    assert "garbage collection failed: RuntimeError: database is locked" in caplog.text


def test_collect_once_reports_removed_or_none() -> None:
    collector = GarbageCollector(CountingStorage(4, ValueError("x")), 1.0)  # type: ignore[arg-type]
    assert collector.collect_once() == 4
    assert collector.collect_once() is None


def test_stop_ends_a_started_thread() -> None:
    collector = GarbageCollector(CountingStorage(), 3600.0)  # type: ignore[arg-type]
    collector.start()
    assert collector._thread is not None and collector._thread.daemon
    collector.stop(timeout=5)
    assert not collector._thread.is_alive()


def test_interval_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="disables"):
        GarbageCollector(CountingStorage(), 0)  # type: ignore[arg-type]


def test_every_backend_is_collected_each_round_and_new_ones_join() -> None:
    backends = {"a": CountingStorage(1, 1), "b": CountingStorage(2, 2)}
    collector = GarbageCollector(lambda: backends, 1.0)  # type: ignore[arg-type,return-value]
    assert collector.collect_once() == 3
    backends["c"] = CountingStorage(4)  # a pool registered while the worker runs
    assert collector.collect_once() == 7
    assert [storage.calls for storage in backends.values()] == [2, 2, 1]


def test_a_failing_backend_is_logged_and_the_others_are_still_collected(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backends = {
        "down": PoolDown("connection refused"),
        "broken": CountingStorage(RuntimeError("disk full")),
        "up": CountingStorage(5),
    }
    collector = GarbageCollector(lambda: backends, 1.0)  # type: ignore[arg-type,return-value]
    with caplog.at_level(logging.WARNING, logger="zq.housekeeping"):
        assert collector.collect_once() == 5
    assert backends["up"].calls == 1  # type: ignore[union-attr]
    assert "the pool is unreachable: connection refused (pool 'down')" in caplog.text
    assert "RuntimeError: disk full (pool 'broken')" in caplog.text


def test_a_round_where_every_backend_fails_reports_none() -> None:
    collector = GarbageCollector(lambda: {"down": PoolDown("refused")}, 1.0)
    assert collector.collect_once() is None


def test_a_failure_to_list_the_pools_is_logged_and_the_loop_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = []

    def storages() -> dict:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("management store down")
        return {"a": CountingStorage(1)}

    stop = ScriptedStop(rounds=2)
    with caplog.at_level(logging.WARNING, logger="zq.housekeeping"):
        GarbageCollector(storages, 1.0, stop=stop).run()
    assert len(calls) == 2
    assert "cannot list the pools: ConnectionError: management store down" in caplog.text


def test_after_collect_runs_at_start_and_after_each_collection() -> None:
    storage = CountingStorage(1, ValueError("down"), 0)
    seen: list[int] = []

    def redrive_due(backend: object) -> int:
        assert backend is storage
        seen.append(storage.calls)  # how many collections had run before it
        return 2

    stop = ScriptedStop(rounds=3)
    GarbageCollector(storage, 30.0, stop=stop, after_collect=redrive_due).run()  # type: ignore[arg-type]
    # At start (nothing collected yet, a crash may have left a redrive due),
    # then after each collection that worked (the failed one is retried later).
    assert seen == [0, 1, 3]


def test_a_failing_after_collect_is_logged_and_never_stops_the_loop(caplog) -> None:
    storage = CountingStorage()

    def broken(backend: object) -> int:
        raise RuntimeError("dead letter queue unreadable")

    stop = ScriptedStop(rounds=2)
    with caplog.at_level(logging.WARNING, logger="zq.housekeeping"):
        GarbageCollector(storage, 30.0, stop=stop, after_collect=broken).run()  # type: ignore[arg-type]
    assert storage.calls == 2
    assert caplog.text.count("automatic redrive after an outage failed: RuntimeError") == 3
