"""zq.poison.auto_redrive: which dead letters an outage sends back."""

from __future__ import annotations

from dataclasses import replace

from zq.poison import auto_redrive, moves
from zq.poison.auto_redrive import Outage
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
