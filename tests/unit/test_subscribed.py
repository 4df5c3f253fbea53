"""zq.service.subscribed: answers kept for SECONDS, forgotten on demand, bounded."""

from __future__ import annotations

from zq.clock import ManualClock
from zq.service.subscribed import SubscribedQueues


class Lookups:
    def __init__(self) -> None:
        self.answer = False
        self.calls: list[tuple[str, str]] = []

    def __call__(self, project: str, queue: str) -> bool:
        self.calls.append((project, queue))
        return self.answer


def test_an_answer_is_kept_for_its_seconds_then_asked_again() -> None:
    clock, lookup = ManualClock(start=100.0), Lookups()
    cache = SubscribedQueues(clock, seconds=2.0)
    assert cache.has("p", "q", lookup) is False
    lookup.answer = True
    clock.advance(1.9)
    assert cache.has("p", "q", lookup) is False  # still the cached answer
    clock.advance(0.2)
    assert cache.has("p", "q", lookup) is True
    assert lookup.calls == [("p", "q"), ("p", "q")]


def test_forget_asks_again_at_once_and_queues_are_apart() -> None:
    clock, lookup = ManualClock(start=100.0), Lookups()
    cache = SubscribedQueues(clock)
    cache.has("p", "q", lookup)
    cache.has("p", "other", lookup)
    lookup.answer = True
    cache.forget("p", "q")
    assert cache.has("p", "q", lookup) is True
    assert cache.has("p", "other", lookup) is False
    assert cache.has("p2", "q", lookup) is True  # another project's queue of that name
    assert len(lookup.calls) == 4


def test_the_oldest_answer_goes_past_capacity() -> None:
    clock, lookup = ManualClock(start=100.0), Lookups()
    cache = SubscribedQueues(clock, capacity=2)
    for queue in ("a", "b", "c"):
        cache.has("p", queue, lookup)
    cache.has("p", "c", lookup)
    cache.has("p", "b", lookup)
    assert lookup.calls == [("p", "a"), ("p", "b"), ("p", "c")]
    cache.has("p", "a", lookup)  # evicted: asked again
    assert lookup.calls[-1] == ("p", "a") and len(lookup.calls) == 4
