"""zq.poison.backoff: the formula, the jitter, the schedule the Redis scripts index."""

from __future__ import annotations

import pytest

from zq.poison import backoff
from zq.poison.backoff import EXPONENTIAL, FIXED, LINEAR, BackoffPolicy


def exact(delay: float, max_delay: float, kind: str) -> BackoffPolicy:
    return BackoffPolicy(delay=delay, max_delay=max_delay, kind=kind, jitter=0.0)


@pytest.mark.parametrize(("kind", "expected"), [
    (FIXED, [5, 5, 5, 5, 5]),
    (LINEAR, [5, 10, 15, 20, 20]),
    (EXPONENTIAL, [5, 10, 20, 20, 20]),
])
def test_base_delay_by_kind_is_capped(kind, expected):
    policy = exact(5, 20, kind)
    assert [policy.base_delay(n) for n in range(1, 6)] == expected


def test_a_huge_claim_count_gives_the_cap():
    assert exact(1, 900, EXPONENTIAL).base_delay(10**6) == 900


@pytest.mark.parametrize("draw", [0.0, 0.5, 0.999999])
def test_jitter_takes_up_to_a_tenth_off(draw):
    policy = BackoffPolicy(delay=100, max_delay=100, draw=lambda: draw)
    assert policy.delay_for(3) == pytest.approx(100 * (1 - 0.1 * draw))
    assert 90 < policy.delay_for(3) <= 100


@pytest.mark.parametrize("kind", [FIXED, LINEAR, EXPONENTIAL])
@pytest.mark.parametrize(("delay", "max_delay"), [(1, 900), (7, 7), (3, 100), (0, 0), (10, 11)])
def test_schedule_matches_the_formula_for_every_count(kind, delay, max_delay):
    policy = exact(delay, max_delay, kind)
    schedule = policy.schedule()
    for n in range(1, 2000):
        assert schedule[min(n, len(schedule)) - 1] == policy.base_delay(n), n
    assert schedule[-1] == max_delay or kind == FIXED


def test_policy_from_metadata():
    assert backoff.policy_from_metadata({}, 900) is None
    assert backoff.policy_from_metadata({"_retry_delay": 0}, 900) is None
    policy = backoff.policy_from_metadata({"_retry_delay": 2}, 900)
    assert (policy.delay, policy.max_delay, policy.kind) == (2, 900, EXPONENTIAL)
    policy = backoff.policy_from_metadata(
        {"_retry_delay": 2, "_retry_max_delay": 60, "_retry_backoff": "linear"}, 900)
    assert (policy.delay, policy.max_delay, policy.kind) == (2, 60, LINEAR)


def test_release_delay_is_what_a_held_message_carries_past_its_claim():
    assert backoff.release_delay(130.0, 100.0) == 30.0
    assert backoff.release_delay(50.0, 100.0) == 0.0
