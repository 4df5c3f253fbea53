"""The periodic garbage collector, driven without sleeping."""

from __future__ import annotations

import logging
import random

import pytest

from zq.housekeeping import JITTER, GarbageCollector


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

    def gc(self) -> int:
        self.calls += 1
        result = self.results.pop(0) if self.results else 0
        if isinstance(result, Exception):
            raise result
        return result


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
