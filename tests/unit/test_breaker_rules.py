"""The breaker's and blame split's rules above the contract (zq.poison.breaker, .blame)."""

from __future__ import annotations

import pytest

from zq import metadata
from zq.config import Limits
from zq.errors import InvalidRequest
from zq.poison import blame, breaker, moves
from zq.poison.dead_letter import DeadLetterPolicy
from zq.poison.history import compact_history
from zq.poison.redrive import dead_letter_entry
from zq.storage.records import MessageRecord

LIMITS = Limits()


def test_no_ratio_no_breaker():
    assert breaker.policy_from_metadata({}) is None
    # The other keys alone are accepted and wait for the ratio.
    assert breaker.policy_from_metadata({breaker.WINDOW: 30}) is None


def test_policy_defaults_and_values():
    assert breaker.policy_from_metadata({breaker.FAILURE_RATIO: 0.5}) == breaker.BreakerPolicy(
        failure_ratio=0.5, min_failures=20, window=60, probe_interval=5, close_after=3,
        auto_redrive_max=1)
    assert breaker.policy_from_metadata({
        breaker.FAILURE_RATIO: 1, breaker.MIN_FAILURES: 2, breaker.WINDOW: 10,
        breaker.PROBE_INTERVAL: 1, breaker.CLOSE_AFTER: 4, breaker.AUTO_REDRIVE_MAX: 0,
    }) == breaker.BreakerPolicy(1.0, 2, 10, 1, 4, 0)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("_breaker_failure_ratio", 0, "_breaker_failure_ratio must be above 0 and at most 1"),
    ("_breaker_failure_ratio", 1.5, "_breaker_failure_ratio must be above 0 and at most 1"),
    ("_breaker_failure_ratio", "0.5", "_breaker_failure_ratio must be a number"),
    ("_breaker_failure_ratio", True, "_breaker_failure_ratio must be a number"),
    ("_breaker_min_failures", 0, "_breaker_min_failures must be between 1"),
    ("_breaker_min_failures", 2.5, "_breaker_min_failures must be an integer"),
    ("_breaker_window", 0, "_breaker_window must be between 1"),
    ("_breaker_probe_interval", -1, "_breaker_probe_interval must be between 1"),
    ("_breaker_close_after", 0, "_breaker_close_after must be between 1"),
    ("_auto_redrive_max", -1, "_auto_redrive_max must be between 0"),
    ("_auto_redrive_max", "1", "_auto_redrive_max must be an integer"),
])
def test_wrong_values_are_refused_by_name(key, value, message):
    with pytest.raises(InvalidRequest, match=message):
        metadata.validate({key: value}, LIMITS)


def test_valid_values_are_stored_and_shown_only_when_set():
    stored = metadata.validate({"_breaker_failure_ratio": 0.25, "_breaker_window": 30,
                                "_auto_redrive_max": 0}, LIMITS)
    assert stored == {"_breaker_failure_ratio": 0.25, "_breaker_window": 30,
                      "_auto_redrive_max": 0}
    shown = metadata.with_defaults({}, LIMITS)
    assert not any(key in shown for key in breaker.KEYS)


def test_trips_needs_the_ratio_and_enough_messages():
    policy = breaker.BreakerPolicy(failure_ratio=0.5, min_failures=3)
    assert breaker.trips(policy, 3, 3, 3)
    assert not breaker.trips(policy, 3, 4, 3)
    assert not breaker.trips(policy, 10, 0, 2)
    assert not breaker.trips(policy, 0, 0, 0)


def test_most_common_description_ties_go_to_the_latest():
    assert breaker.most_common([]) is None
    assert breaker.most_common([(1.0, None)]) is None
    assert breaker.most_common([(1.0, "a"), (2.0, "b"), (3.0, "a")]) == "a"
    assert breaker.most_common([(1.0, "a"), (2.0, "b"), (0.5, None)]) == "b"
    assert breaker.most_common([(5.0, "a"), (2.0, "b")]) == "a"


def test_description_fingerprint_ignores_ids_and_numbers():
    fp = breaker.description_fingerprint
    assert fp(None) is None
    assert fp("Connection to 10.0.0.7:5432 refused (attempt 3)") == fp(
        "connection to 10.0.0.9:5432 refused (attempt 12)")
    assert fp("order 5f0c6b1e-9a2d-4c7f-8b3e-1a0d6c9f2b4e failed") == fp(
        "order 0b1c6b1e-9a2d-4c7f-8b3e-1a0d6c9f2b4f failed")
    assert fp("database down") != fp("bad input")
    assert fp("x" * 300) == fp("x" * 200)


def test_stored_description_is_truncated():
    assert breaker.stored_description("x" * 300) == "x" * breaker.DESCRIPTION_CHARS
    assert breaker.stored_description(None) is None


def test_forgiven_deliveries_do_not_exhaust():
    policy = DeadLetterPolicy(max_claim_count=2, queue="dlq")
    assert policy.is_exhausted(2)
    assert not policy.is_exhausted(2, 1)
    assert policy.is_exhausted(3, 1)


@pytest.mark.parametrize(("known", "client", "suspected", "outage", "charged", "after"), [
    ((), "a", True, False, blame.CONSUMER, ("a",)),
    ((), "a", False, False, blame.MESSAGE, ("a",)),
    ((), None, True, False, blame.MESSAGE, ()),
    (("a",), "a", True, False, blame.CONSUMER, ("a",)),
    # Two consumers: the message is the common factor, even with a suspect.
    (("a",), "b", True, False, blame.MESSAGE, ("a", "b")),
    (("a", "b"), "c", True, False, blame.MESSAGE, ("a", "b")),
    (("a",), "b", False, True, blame.OUTAGE, ("a", "b")),
])
def test_judge(known, client, suspected, outage, charged, after):
    lapse = blame.judge(known, client, suspected=suspected, outage=outage)
    assert (lapse.charged_to, lapse.lapsed_with) == (charged, after)
    assert lapse.forgiven == (charged != blame.MESSAGE)


def test_suspects():
    assert blame.suspects(other_unsettled_lapses=1, claims_since=3)
    assert blame.suspects(other_unsettled_lapses=0, claims_since=0)
    assert not blame.suspects(other_unsettled_lapses=0, claims_since=1)


def _lapse(n, charged=blame.CONSUMER):
    return blame.lapse_entry("q", float(n), f"c{n}", blame.Lapse(charged, ()))


def test_lapse_entries_are_bounded_moves_are_kept():
    move = moves.rejected("dlq", None, "x").history_entry("src", 0.5)
    history = [move]
    for n in range(blame.LAPSE_ENTRIES + 5):
        history = blame.with_lapse(history, _lapse(n))
    assert history[0] == move
    assert [e["time"] for e in history[1:]] == [
        float(n) for n in range(5, blame.LAPSE_ENTRIES + 5)]


def test_lapse_entries_are_not_dead_letter_entries():
    move = moves.dead_lettered("dlq", None).history_entry("src", 1.0)
    record = MessageRecord(id="m", queue="dlq", body="{}", ttl=60, created=0, expires=60,
                           client_id=None, claim_id=None, claim_count=1,
                           history=[move, _lapse(2)])
    assert dead_letter_entry(record) == move
    assert dead_letter_entry(MessageRecord(
        id="m", queue="q", body="{}", ttl=60, created=0, expires=60, client_id=None,
        claim_id=None, claim_count=1, history=[_lapse(2)])) is None


def test_lapse_entries_compact_by_whom_they_charged():
    shown = compact_history([_lapse(1), _lapse(2), _lapse(3, blame.MESSAGE)])
    assert [(e["reason"], e["charged_to"], e["count"], e["client_id"]) for e in shown] == [
        ("lapsed", blame.MESSAGE, 1, "c3"), ("lapsed", blame.CONSUMER, 2, "c2")]


def test_exhaustion_description_names_the_consumers():
    assert "a and b" in blame.exhaustion_description(("a", "b"))
    assert "a" in blame.exhaustion_description(("a",))
    assert "no Client-ID" in blame.exhaustion_description(())
