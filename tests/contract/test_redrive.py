"""Redrive on every driver: the rule of zq/poison/redrive.py over the move primitive.

The rule lives above the contract; what it needs from each driver (the
listing with history, ``get_many``, ``move`` skipping what left the queue)
is exercised here on every backend, with the injected clock.
"""

from __future__ import annotations

import pytest

from zq import events as kinds
from zq.config import Limits
from zq.errors import InvalidRequest, MessageNotFound, QueueNotFound
from zq.events import fingerprint
from zq.poison import moves
from zq.pooling import SingleBackend
from zq.service import QueueService

from .helpers import claim, events_of, ids, post

EVERYTHING = {"echo": True, "include_claimed": True, "include_delayed": True}


@pytest.fixture
def service(storage):
    return QueueService(Limits(), SingleBackend(storage))


def dead_letter(storage, project, source, count, *, reason="rejected", description=None,
                dlq="dlq"):
    """Post ``count`` messages to ``source`` and move them to ``dlq`` with ``reason``."""
    posted = post(storage, project, source, count)
    move = {"rejected": moves.rejected(dlq, None, description),
            "max_claim_count": moves.dead_lettered(dlq, None),
            "expired": moves.expired(dlq, None)}[reason]
    assert storage.messages.move(project, source, posted, move, client_id=None) == posted
    return posted


def where(storage, project, message_id, queues):
    found = []
    for queue in queues:
        try:
            storage.messages.get(project, queue, message_id)
        except MessageNotFound:
            continue
        found.append(queue)
    return found


def test_each_message_goes_back_to_the_queue_it_was_dead_lettered_from(
        storage, service, project, clock):
    service.create_queue(project, "orders", {"_default_message_ttl": 900})
    from_orders = dead_letter(storage, project, "orders", 2, description="KeyError")
    from_refunds = dead_letter(storage, project, "refunds", 1, reason="max_claim_count")
    clock.advance(5)
    result = service.redrive(project, "dlq", None, client_id="operator")
    assert result.as_dict() == {"matched": 3, "moved": 3, "to": {"orders": 2, "refunds": 1},
                                "created": [], "next": None}
    for mid in from_orders:
        assert where(storage, project, mid, ("orders", "refunds", "dlq")) == ["orders"]
    assert where(storage, project, from_refunds[0], ("orders", "refunds", "dlq")) == ["refunds"]
    back = storage.messages.get(project, "orders", from_orders[0])
    # Keeps id and body, claims start over, one redrive counted, the
    # destination's default ttl from now, a history entry appended.
    assert (back.claim_count, back.redrive_count, back.ttl) == (0, 1, 900)
    assert back.expires == pytest.approx(clock.now() + 900)
    assert back.body == '{"n": 0}'
    assert [(e["queue"], e["reason"]) for e in back.history] == [
        ("orders", "rejected"), ("dlq", "redriven")]
    assert back.history[0]["description"] == "KeyError"
    refunds_back = storage.messages.get(project, "refunds", from_refunds[0])
    assert refunds_back.ttl == Limits().default_message_ttl
    redriven = events_of(storage, project, kinds.REDRIVEN)
    assert sorted(e.message_id for e in redriven) == sorted(from_orders + from_refunds)
    assert {(e.queue, e.client_id) for e in redriven} == {("dlq", "operator")}
    assert {e.detail["to"] for e in redriven} == {"orders", "refunds"}
    assert storage.queues.stats(project, "dlq").total == 0


def test_a_redriven_message_is_claimable_again_in_its_queue(storage, service, project):
    [mid] = dead_letter(storage, project, "orders", 1)
    service.redrive(project, "dlq", {}, client_id=None)
    claimed = claim(storage, project, "orders")
    assert ids(claimed.messages) == [mid] and claimed.messages[0].claim_count == 1


def test_to_overrides_the_source_and_a_missing_destination_is_created_only_when_asked(
        storage, service, project):
    posted = dead_letter(storage, project, "orders", 2)
    assert not storage.queues.exists(project, "orders-retry")
    with pytest.raises(QueueNotFound, match=r"Queue 'orders-retry' does not exist\. "
                                            r'.*"create": true'):
        service.redrive(project, "dlq", {"to": "orders-retry"}, client_id=None)
    assert not storage.queues.exists(project, "orders-retry")
    assert ids(storage.messages.list(project, "dlq", **EVERYTHING)) == posted
    result = service.redrive(project, "dlq", {"to": "orders-retry", "create": True},
                             client_id=None)
    assert (result.moved, result.to, result.created) == (2, {"orders-retry": 2},
                                                         ("orders-retry",))
    assert storage.queues.exists(project, "orders-retry")
    assert ids(storage.messages.list(project, "orders-retry", **EVERYTHING)) == posted


def test_an_existing_destination_is_not_reported_as_created(storage, service, project):
    dead_letter(storage, project, "orders", 1)
    service.create_queue(project, "orders-retry", None)
    result = service.redrive(project, "dlq", {"to": "orders-retry", "create": True},
                             client_id=None)
    assert (result.moved, result.created) == (1, ())


def test_a_deleted_source_queue_is_recreated_only_when_asked(storage, service, project):
    [mid] = dead_letter(storage, project, "orders", 1)
    service.delete_queue(project, "orders")
    with pytest.raises(QueueNotFound, match="'orders', which the messages were dead lettered "
                                            "from, does not exist"):
        service.redrive(project, "dlq", None, client_id=None)
    dry = service.redrive(project, "dlq", {"dry_run": True, "create": True}, client_id=None)
    assert (dry.matched, dry.moved, dry.created) == (1, 0, ("orders",))
    assert not storage.queues.exists(project, "orders")
    result = service.redrive(project, "dlq", {"create": True}, client_id=None)
    assert (result.moved, result.created) == (1, ("orders",))
    assert where(storage, project, mid, ("orders", "dlq")) == ["orders"]


def test_a_missing_to_is_refused_even_when_nothing_matches(storage, service, project):
    dead_letter(storage, project, "orders", 1)
    with pytest.raises(QueueNotFound, match="'orders-retyr' does not exist"):
        service.redrive(project, "dlq", {"to": "orders-retyr", "filter": {"from": "refunds"}},
                        client_id=None)


def test_a_dead_letter_queue_that_does_not_exist_is_not_found(storage, service, project):
    for body in (None, {"dry_run": True}, {"to": "orders", "create": True}):
        with pytest.raises(QueueNotFound, match="'no-such-dlq' does not exist"):
            service.redrive(project, "no-such-dlq", body, client_id=None)
    assert not storage.queues.exists(project, "orders")


def test_an_empty_dead_letter_queue_matches_nothing(storage, service, project):
    service.create_queue(project, "dlq", None)
    assert service.redrive(project, "dlq", None, client_id=None).as_dict() == {
        "matched": 0, "moved": 0, "to": {}, "created": [], "next": None}


def test_a_dry_run_moves_nothing_and_says_what_would_move(storage, service, project):
    posted = dead_letter(storage, project, "orders", 3)
    result = service.redrive(project, "dlq", {"dry_run": True}, client_id=None)
    assert result.as_dict() == {"matched": 3, "moved": 0, "to": {"orders": 3}, "created": [],
                                "next": None}
    assert ids(storage.messages.list(project, "dlq", **EVERYTHING)) == posted
    assert events_of(storage, project, kinds.REDRIVEN) == []
    assert not storage.queues.exists(project, "nowhere")
    with pytest.raises(QueueNotFound):  # as the real run would answer
        service.redrive(project, "dlq", {"dry_run": True, "to": "nowhere"}, client_id=None)
    result = service.redrive(project, "dlq", {"dry_run": True, "to": "nowhere", "create": True},
                             client_id=None)
    assert (result.to, result.created) == ({"nowhere": 3}, ("nowhere",))
    assert not storage.queues.exists(project, "nowhere")


@pytest.mark.parametrize("selected, expected", [
    ({"reason": "rejected"}, {"a"}),
    ({"reason": "max_claim_count"}, {"b"}),
    ({"reason": "expired"}, {"c"}),
    ({"from": "orders"}, {"a", "b"}),
    ({"from": "orders", "reason": "max_claim_count"}, {"b"}),
    ({"from": "refunds"}, {"c"}),
    ({"dead_lettered_before": 150}, {"a"}),
    ({"dead_lettered_after": 150}, {"b", "c"}),
    ({"dead_lettered_after": 150, "dead_lettered_before": 250}, {"b"}),
])
def test_filters_read_the_most_recent_history_entry(
        storage, service, project, clock, selected, expected):
    start = clock.now()  # times in the parameters are seconds after it
    clock.advance(100)
    named = {"a": dead_letter(storage, project, "orders", 1, reason="rejected")[0]}
    clock.advance(100)
    named["b"] = dead_letter(storage, project, "orders", 1, reason="max_claim_count")[0]
    clock.advance(100)
    named["c"] = dead_letter(storage, project, "refunds", 1, reason="expired")[0]
    selected = {key: start + value if key.startswith("dead_lettered") else value
                for key, value in selected.items()}
    result = service.redrive(project, "dlq", {"filter": selected}, client_id=None)
    left = set(ids(storage.messages.list(project, "dlq", **EVERYTHING)))
    assert {n for n, mid in named.items() if mid not in left} == expected
    assert result.matched == result.moved == len(expected)


def test_only_the_most_recent_entry_counts(storage, service, project):
    # Dead lettered from "orders" (rejected), redriven, then dead lettered
    # again from "orders" by exhaustion: only the last move is its reason.
    [mid] = dead_letter(storage, project, "orders", 1, reason="rejected")
    service.redrive(project, "dlq", None, client_id=None)
    storage.messages.move(project, "orders", [mid], moves.dead_lettered("dlq", None),
                          client_id=None)
    assert service.redrive(project, "dlq", {"filter": {"reason": "rejected"}},
                           client_id=None).matched == 0
    result = service.redrive(project, "dlq", {"filter": {"reason": "max_claim_count"}},
                             client_id=None)
    assert result.moved == 1
    assert storage.messages.get(project, "orders", mid).redrive_count == 2


def test_fingerprint_selects_by_the_fingerprint_events_carry(storage, service, project):
    posted = dead_letter(storage, project, "orders", 3)
    [event] = [e for e in events_of(storage, project, kinds.DEAD_LETTERED)
               if e.message_id == posted[1]]
    wanted = event.detail["fingerprint"]
    assert wanted == fingerprint('{"n": 1}')
    result = service.redrive(project, "dlq", {"filter": {"fingerprint": wanted}},
                             client_id=None)
    assert (result.matched, result.moved) == (1, 1)
    assert where(storage, project, posted[1], ("orders", "dlq")) == ["orders"]


def test_ids_select_only_those_of_the_dead_letter_queue(storage, service, project):
    posted = dead_letter(storage, project, "orders", 3)
    elsewhere = post(storage, project, "other", 1)
    result = service.redrive(project, "dlq", {"filter": {"ids": [posted[2], elsewhere[0],
                                                                 "f" * 24]}},
                             client_id=None)
    assert (result.matched, result.moved, result.next) == (1, 1, None)
    assert where(storage, project, posted[2], ("orders", "dlq")) == ["orders"]
    assert where(storage, project, elsewhere[0], ("other", "orders", "dlq")) == ["other"]


def test_limit_and_next_page_through_the_dead_letter_queue(storage, service, project):
    posted = dead_letter(storage, project, "orders", 5)
    seen = []
    body = {"limit": 2}
    answers = []
    while True:
        result = service.redrive(project, "dlq", body, client_id=None)
        answers.append((result.matched, result.moved))
        seen += ids(storage.messages.list(project, "orders", **EVERYTHING))[len(seen):]
        if result.next is None:
            break
        body = {"limit": 2, "marker": result.next}
    assert answers[:3] == [(2, 2), (2, 2), (1, 1)]
    assert seen == posted
    assert storage.queues.stats(project, "dlq").total == 0


def test_a_dry_run_pages_with_next_too(storage, service, project):
    posted = dead_letter(storage, project, "orders", 3)
    first = service.redrive(project, "dlq", {"limit": 2, "dry_run": True}, client_id=None)
    assert (first.matched, first.next is not None) == (2, True)
    second = service.redrive(project, "dlq", {"limit": 2, "dry_run": True,
                                              "marker": first.next}, client_id=None)
    assert second.matched == 1
    assert len(posted) == storage.queues.stats(project, "dlq").total


def test_a_message_posted_into_the_dead_letter_queue_needs_to(storage, service, project):
    [direct] = post(storage, project, "dlq", 1)
    assert service.redrive(project, "dlq", None, client_id=None).matched == 0
    assert service.redrive(project, "dlq", {"filter": {"reason": "rejected"},
                                            "to": "orders", "create": True},
                           client_id=None).as_dict() == {
        "matched": 0, "moved": 0, "to": {}, "created": [], "next": None}
    assert not storage.queues.exists(project, "orders")
    assert service.redrive(project, "dlq", {"to": "orders", "create": True},
                           client_id=None).moved == 1
    assert where(storage, project, direct, ("orders", "dlq")) == ["orders"]


def test_a_claimed_dead_letter_stays_with_its_holder(storage, service, project):
    posted = dead_letter(storage, project, "orders", 2)
    held = claim(storage, project, "dlq", 1)
    result = service.redrive(project, "dlq", None, client_id=None)
    assert (result.matched, result.moved) == (1, 1)
    assert where(storage, project, held.messages[0].id, ("orders", "dlq")) == ["dlq"]
    assert where(storage, project, posted[1], ("orders", "dlq")) == ["orders"]


def test_a_second_redrive_of_the_same_messages_moves_nothing(storage, service, project):
    posted = dead_letter(storage, project, "orders", 2)
    body = {"filter": {"ids": posted}}
    assert service.redrive(project, "dlq", body, client_id=None).moved == 2
    again = service.redrive(project, "dlq", body, client_id=None)
    assert (again.matched, again.moved) == (0, 0)
    assert len(events_of(storage, project, kinds.REDRIVEN)) == 2


def test_redriving_into_the_dead_letter_queue_itself_is_refused(storage, service, project):
    dead_letter(storage, project, "orders", 1)
    with pytest.raises(InvalidRequest, match="dead letter queue itself"):
        service.redrive(project, "dlq", {"to": "dlq"}, client_id=None)
    assert storage.queues.stats(project, "dlq").total == 1


def test_a_call_walks_a_bounded_part_of_the_queue_and_next_goes_on(storage, project):
    # Pages of 2 x 10 = 20; a call reads at most SCAN_FACTOR (10) x 20 messages.
    service = QueueService(Limits(max_messages_per_page=2), SingleBackend(storage))
    dead_letter(storage, project, "refunds", 250)
    [wanted] = dead_letter(storage, project, "orders", 1)
    first = service.redrive(project, "dlq", {"filter": {"from": "orders"}}, client_id=None)
    assert (first.matched, first.moved) == (0, 0) and first.next is not None
    second = service.redrive(project, "dlq", {"filter": {"from": "orders"},
                                              "marker": first.next}, client_id=None)
    assert (second.matched, second.moved, second.next) == (1, 1, None)
    assert where(storage, project, wanted, ("orders", "dlq")) == ["orders"]
