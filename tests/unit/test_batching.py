"""The leader/follower hand-off shared by Redis coalescing and SQL group commit.

zq.storage.batching, on a batcher whose batches answer each unit with its
own value (or raise it, when it is an exception). A first batch is held
open on an event while the test queues the units it wants in the next one,
and the line tells the test each time a unit joins it: which units share a
batch never depends on timing, and nothing sleeps.
"""

from __future__ import annotations

import threading
from typing import Any

from zq.storage.batching import Batcher, Unit


class Job(Unit):
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value


class Line(list):
    """The batcher's line: tells the test each time a unit joins it."""

    def __init__(self) -> None:
        super().__init__()
        self.joined = threading.Semaphore(0)

    def append(self, unit: Any) -> None:
        super().append(unit)
        self.joined.release()

    def wait_for(self, count: int) -> None:
        for _ in range(count):
            assert self.joined.acquire(timeout=10), "a unit never joined the line"


class Echo(Batcher[Job]):
    """Answers each unit ("done", value), or its value as its error; the first
    batch is held open until ``release`` is set."""

    def __init__(self, **options: Any) -> None:
        options.setdefault("max_batch", 64)
        super().__init__(**options)
        self._waiting = self.line = Line()
        self.batches: list[list[Any]] = []  # the values of each batch, in order
        self.leaders: list[str] = []  # the thread that ran each batch
        self.release = threading.Event()
        self.release.set()
        self.held = threading.Event()
        self.crash: Any = None  # a value whose batch raises, answering nobody

    def call(self, value: Any) -> Any:
        return self._submit(Job(value))

    def _run_batch(self, batch: list[Job]) -> None:
        self.batches.append([unit.value for unit in batch])
        self.leaders.append(threading.current_thread().name)
        if not self.release.is_set():
            self.held.set()
            assert self.release.wait(10)
        if self.crash is not None and any(unit.value == self.crash for unit in batch):
            raise RuntimeError("the batch failed as a whole")
        for unit in batch:
            if isinstance(unit.value, Exception):
                unit.error = unit.value
            else:
                unit.result = ("done", unit.value)


class Callers:
    """One thread per call, named for its value; the outcome of each."""

    def __init__(self, batcher: Echo) -> None:
        self.batcher = batcher
        self.threads: list[threading.Thread] = []
        self.outcomes: dict[str, Any] = {}

    def start(self, name: str, value: Any = None) -> None:
        def run() -> None:
            try:
                self.outcomes[name] = self.batcher.call(name if value is None else value)
            except BaseException as error:
                self.outcomes[name] = error

        # A daemon: a caller left waiting fails its test, not the whole run.
        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self) -> dict[str, Any]:
        for thread in self.threads:
            thread.join(10)
            assert not thread.is_alive(), f"{thread.name} was left waiting"
        return self.outcomes


def held_open(batcher: Echo, callers: Callers) -> None:
    """Start "first", whose batch (itself alone) is held open."""
    batcher.release.clear()
    callers.start("first")
    assert batcher.held.wait(10)
    batcher.line.wait_for(1)


def queue(batcher: Echo, callers: Callers, *calls: tuple[str, Any]) -> None:
    """Queue calls behind the held batch, one after the other (so in this order)."""
    for name, value in calls:
        callers.start(name, value)
        batcher.line.wait_for(1)


def idle(batcher: Echo) -> bool:
    return not batcher._leading and not batcher._waiting


def test_a_lone_unit_runs_at_once_alone_in_its_callers_thread() -> None:
    def no_wait(seconds: float) -> None:
        raise AssertionError("a window of 0 waits for nothing")

    batcher = Echo(sleep=no_wait)
    assert batcher.call("a") == ("done", "a")
    assert batcher.call("b") == ("done", "b")
    assert batcher.batches == [["a"], ["b"]]
    assert batcher.leaders == [threading.current_thread().name] * 2
    assert idle(batcher)


def test_units_queued_while_a_batch_runs_go_out_together_each_with_its_own_outcome() -> None:
    batcher = Echo()
    callers = Callers(batcher)
    held_open(batcher, callers)
    boom = ValueError("b's own error")
    queue(batcher, callers, ("a", None), ("b", boom), ("c", None))
    batcher.release.set()
    outcomes = callers.join()
    assert batcher.batches == [["first"], ["a", boom, "c"]]
    # The first of those who waited led their batch, in its own thread.
    assert batcher.leaders == ["first", "a"]
    assert outcomes == {"first": ("done", "first"), "a": ("done", "a"), "b": boom,
                        "c": ("done", "c")}
    assert idle(batcher)


def test_a_longer_line_is_led_in_turns_of_max_batch() -> None:
    batcher = Echo(max_batch=2)
    callers = Callers(batcher)
    held_open(batcher, callers)
    names = [f"u{n}" for n in range(5)]
    queue(batcher, callers, *((name, None) for name in names))
    batcher.release.set()
    outcomes = callers.join()
    assert batcher.batches == [["first"], ["u0", "u1"], ["u2", "u3"], ["u4"]]
    assert batcher.leaders == ["first", "u0", "u2", "u4"]
    assert outcomes == {name: ("done", name) for name in ["first", *names]}
    assert idle(batcher)


def test_the_window_lets_later_units_join_the_leaders_batch() -> None:
    waits: list[float] = []
    callers: list[Callers] = []

    def window(seconds: float) -> None:
        # While the leader waits out its window, another call arrives.
        waits.append(seconds)
        if len(waits) == 1:
            callers[0].start("late")
            batcher.line.wait_for(1)

    batcher = Echo(window=0.005, sleep=window)
    callers.append(Callers(batcher))
    callers[0].start("lead")
    batcher.line.wait_for(1)
    outcomes = callers[0].join()
    assert waits == [0.005]
    assert batcher.batches == [["lead", "late"]]
    assert outcomes == {"lead": ("done", "lead"), "late": ("done", "late")}
    assert idle(batcher)


def test_a_batch_that_raises_fails_each_of_its_callers_and_hands_on_the_lead() -> None:
    batcher = Echo(max_batch=2)
    batcher.crash = "a"
    callers = Callers(batcher)
    held_open(batcher, callers)
    queue(batcher, callers, ("a", None), ("b", None), ("c", None))
    batcher.release.set()
    outcomes = callers.join()
    assert batcher.batches == [["first"], ["a", "b"], ["c"]]
    # Its leader and its follower alike: an error, never an empty result.
    assert isinstance(outcomes["a"], RuntimeError) and outcomes["b"] is outcomes["a"]
    assert outcomes["first"] == ("done", "first") and outcomes["c"] == ("done", "c")
    assert idle(batcher)
    assert batcher.call("after") == ("done", "after")


def test_many_threads_every_unit_answered_once_with_its_own_result() -> None:
    batcher = Echo(max_batch=8)
    answers: dict[tuple[int, int], Any] = {}

    def work(thread: int) -> None:
        for n in range(300):
            answers[thread, n] = batcher.call((thread, n))

    threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive()
    assert answers == {key: ("done", key) for key in answers} and len(answers) == 12 * 300
    ran = [value for batch in batcher.batches for value in batch]
    assert sorted(ran) == sorted(answers)  # each unit ran once
    assert max(len(batch) for batch in batcher.batches) <= 8
    assert idle(batcher)
