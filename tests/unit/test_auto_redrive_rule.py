"""zq.poison.auto_redrive: which dead letters an outage sends back."""

from __future__ import annotations

from dataclasses import replace

from zq.poison import auto_redrive, moves
from zq.poison.auto_redrive import Outage
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.records import MessageRecord

DOWN = "db down: connection to 10.0.0.7:5432 refused"
OUTAGE = Outage.of("q", DOWN, tripped_at=1000.0, closed_at=1100.0, window=60,
                   max_generation=1)


def dead_letter(at: float = 990.0, *, source: str = "q",
                last_failure: str | None = "DB DOWN: connection to 10.0.0.9:5432 refused",
                history: tuple[dict, ...] = (), claim_id: str | None = None) -> MessageRecord:
    entry = moves.rejected("dlq", None, last_failure).history_entry(source, at)
    return MessageRecord(id="m", queue="dlq", body="{}", ttl=3600, created=at,
                         expires=at + 3600, client_id=None, claim_id=claim_id, claim_count=3,
                         history=[*history, entry], last_failure=last_failure)


def test_the_outage_spans_the_window_before_the_trip_up_to_the_close():
    assert (OUTAGE.since, OUTAGE.until) == (940.0, 1100.0)
    assert auto_redrive.selected(dead_letter(940.0), OUTAGE)
    assert auto_redrive.selected(dead_letter(1100.0), OUTAGE)
    assert not auto_redrive.selected(dead_letter(939.9), OUTAGE)
    assert not auto_redrive.selected(dead_letter(1100.1), OUTAGE)


def test_only_the_outage_fingerprint_from_the_breaker_queue():
    assert not auto_redrive.selected(dead_letter(last_failure="KeyError: 'sku'"), OUTAGE)
    assert not auto_redrive.selected(dead_letter(last_failure=None), OUTAGE)  # a lapse
    assert not auto_redrive.selected(dead_letter(source="other"), OUTAGE)


def test_an_outage_known_by_no_description_sends_nothing_back():
    nameless = replace(OUTAGE, fingerprint=None)
    assert not auto_redrive.selected(dead_letter(last_failure=None), nameless)


def test_the_generation_cap():
    earlier = moves.auto_redriven("q", 3600).history_entry("dlq", 500.0)
    once = dead_letter(history=({"queue": "q", "reason": "rejected", "time": 400.0}, earlier))
    assert auto_redrive.generation(once) == 1
    assert not auto_redrive.selected(once, OUTAGE)
    assert auto_redrive.selected(once, replace(OUTAGE, max_generation=2))
    assert not auto_redrive.selected(dead_letter(), replace(OUTAGE, max_generation=0))


def test_a_redriven_message_has_no_dead_letter_entry_to_match():
    back = moves.auto_redriven("dlq", 3600).history_entry("q", 990.0)
    record = replace(dead_letter(), history=[back])
    assert not auto_redrive.selected(record, OUTAGE)


def test_held_messages_are_left_to_their_holder():
    free, held = dead_letter(), replace(dead_letter(), id="h", claim_id="c")
    assert auto_redrive.select([free, held], OUTAGE) == ["m"]


def test_a_close_forced_without_a_trip_looks_back_one_window():
    forced = Outage.of("q", DOWN, tripped_at=None, closed_at=1100.0, window=60,
                       max_generation=1)
    assert (forced.since, forced.until) == (1040.0, 1100.0)


def test_the_redrive_seeks_dead_letters_up_to_its_own_time():
    later = OUTAGE.through(1130.0)
    assert (later.since, later.until) == (940.0, 1130.0)
    assert auto_redrive.selected(dead_letter(1120.0), later)  # a claim moved it after the close
    assert OUTAGE.through(1000.0) == OUTAGE  # never earlier than the close


def waiting(claim_count: int = 2, *, forgiven_count: int = 0, last_failure: str | None = DOWN,
            claim_id: str | None = None, history: tuple[dict, ...] = ()) -> MessageRecord:
    """A message still in the breaker's queue."""
    return MessageRecord(id="w", queue="q", body="{}", ttl=3600, created=900.0,
                         expires=4500.0, client_id=None, claim_id=claim_id,
                         claim_count=claim_count, history=list(history),
                         forgiven_count=forgiven_count, last_failure=last_failure)


def test_what_the_outage_exhausted_in_the_queue_is_found():
    policy = DeadLetterPolicy(max_claim_count=2, queue="dlq")
    assert auto_redrive.exhausted([waiting()], OUTAGE, policy) == ["w"]
    assert auto_redrive.exhausted([waiting(1)], OUTAGE, policy) == []  # one more delivery due
    assert auto_redrive.exhausted([waiting(3, forgiven_count=2)], OUTAGE, policy) == []
    assert auto_redrive.exhausted([waiting(last_failure="KeyError: 'sku'")], OUTAGE, policy) == []
    assert auto_redrive.exhausted([waiting(last_failure=None)], OUTAGE, policy) == []  # a lapse
    assert auto_redrive.exhausted([waiting(claim_id="c")], OUTAGE, policy) == []  # held
    once = waiting(history=(moves.auto_redriven("q", 3600).history_entry("dlq", 500.0),))
    assert auto_redrive.exhausted([once], OUTAGE, policy) == []  # the generation cap
    nameless = replace(OUTAGE, fingerprint=None)
    assert auto_redrive.exhausted([waiting(last_failure=None)], nameless, policy) == []
