"""zq.poison.history.compact_history: what include_history=true shows of the raw entries."""

from __future__ import annotations

from zq.poison import moves
from zq.poison.history import compact_history

T = 1_700_000_000.0


def test_moves_compact_by_queue_and_reason_most_recent_first():
    entries = [
        moves.dead_lettered("dlq", None).history_entry("q", T),
        moves.redriven("q", 60).history_entry("dlq", T + 60),
        moves.dead_lettered("dlq", None).history_entry("q", T + 120),
    ]
    assert compact_history(entries) == [
        {"queue": "q", "reason": "max_claim_count", "count": 2,
         "first_time": "2023-11-14T22:13:20Z", "last_time": "2023-11-14T22:15:20Z"},
        {"queue": "dlq", "reason": "redriven", "count": 1,
         "first_time": "2023-11-14T22:14:20Z", "last_time": "2023-11-14T22:14:20Z"},
    ]


def test_the_last_description_of_a_group_is_kept():
    entries = [
        moves.rejected("dlq", None, "first").history_entry("q", T),
        moves.rejected("dlq", None, "second").history_entry("q", T + 10),
        moves.rejected("dlq", None, None).history_entry("q", T + 20),
    ]
    [shown] = compact_history(entries)
    assert (shown["count"], shown["description"]) == (3, "second")
    # Entries stored out of time order still keep the latest one's text.
    [shown] = compact_history(list(reversed(entries)))
    assert shown["description"] == "second"


def test_no_description_key_when_no_move_had_one():
    [shown] = compact_history([moves.expired("dlq", None).history_entry("q", T)])
    assert "description" not in shown
    assert shown["reason"] == "expired"
