"""POST /v2/queues/{dlq}/redrive: codes, texts and what it does over HTTP."""

from __future__ import annotations

import pytest

from tests.api.helpers import assert_error
from tests.contract.helpers import events_of


def dead_lettered(api, source="orders", count=2, description="KeyError: 'sku'"):
    """Messages posted to ``source``, claimed and rejected into ``dlq``; their ids."""
    api.put(f"/v2/queues/{source}", json={"_dead_letter_queue": "dlq"})
    posted = api.post_messages(source, *({"body": {"n": n}} for n in range(count)))
    claim_id = api.claim(source, limit=count).headers["Location"].rsplit("/", 1)[1]
    for message_id in posted:
        assert api.post(f"/v2/queues/{source}/messages/{message_id}/reject",
                        params={"claim_id": claim_id},
                        json={"description": description}).status_code == 204
    return posted


def redrive(api, queue="dlq", **body):
    return api.post(f"/v2/queues/{queue}/redrive", json=body or None)


def test_redrive_sends_messages_back_with_their_history(api, clock):
    posted = dead_lettered(api)
    clock.advance(3)
    result = redrive(api)
    assert result.status_code == 200
    assert result.json == {"matched": 2, "moved": 2, "to": {"orders": 2}, "created": [],
                           "next": None}
    shown = api.get(f"/v2/queues/orders/messages/{posted[0]}",
                    params={"include_history": "true"}).json
    assert shown["redrive_count"] == 1 and shown["claim_count"] == 0
    assert [(h["queue"], h["reason"]) for h in shown["history"]] == [
        ("dlq", "redriven"), ("orders", "rejected")]
    # The last description of a rejected message stays shown.
    assert shown["history"][1]["description"] == "KeyError: 'sku'"
    assert api.get("/v2/queues/dlq/stats").json["messages"]["total"] == 0


def test_without_include_history_a_redriven_message_shows_neither(api):
    posted = dead_lettered(api, count=1)
    redrive(api)
    shown = api.get(f"/v2/queues/orders/messages/{posted[0]}").json
    assert "history" not in shown and "redrive_count" not in shown


def test_dry_run_and_paging_with_next(api):
    dead_lettered(api, count=3)
    first = redrive(api, dry_run=True, limit=2)
    assert (first.json["matched"], first.json["moved"]) == (2, 0)
    second = redrive(api, dry_run=True, limit=2, marker=first.json["next"])
    assert (second.json["matched"], second.json["next"]) == (1, None)
    assert api.get("/v2/queues/dlq/stats").json["messages"]["total"] == 3


def test_filter_by_fingerprint_from_the_events(api, storage, project):
    posted = dead_lettered(api, count=2)
    wanted = next(e.detail["fingerprint"] for e in events_of(storage, project, "dead_lettered")
                  if e.message_id == posted[1])
    result = redrive(api, filter={"fingerprint": wanted}, to="orders-retry", create=True)
    assert result.json["to"] == {"orders-retry": 1}
    assert result.json["created"] == ["orders-retry"]
    assert api.get(f"/v2/queues/orders-retry/messages/{posted[1]}").status_code == 200


@pytest.mark.parametrize("body, fragment", [
    ({"limit": 500}, "limit must be between 1 and 200"),
    ({"limit": True}, "limit must be an integer"),
    ({"dry_run": 1}, "dry_run must be true or false"),
    ({"create": "yes"}, "create must be true or false"),
    ({"to": ".."}, "to may not be '..'"),
    ({"to": "dlq"}, "dead letter queue itself"),
    ({"colour": "red"}, "not 'colour'"),
    ({"filter": []}, "filter must be a JSON object"),
    ({"filter": {"reason": "bored"}}, "filter.reason must be one of"),
    ({"filter": {"from": ""}}, "filter.from must be a non-empty string"),
    ({"filter": {"fingerprint": "abc"}}, "16 lowercase hex digits"),
    ({"filter": {"ids": "abc"}}, "filter.ids must be a list"),
    ({"filter": {"ids": [1]}}, "filter.ids must be a list"),
    ({"filter": {"dead_lettered_before": "yesterday"}}, "POSIX seconds"),
    ({"filter": {"dead_lettered_after": 10, "dead_lettered_before": 5}}, "must be earlier"),
    ({"filter": {"age": 5}}, "not 'age'"),
    ({"marker": 12}, 'the "next" string'),
])
def test_bad_bodies_are_400_with_a_description(api, body, fragment):
    dead_lettered(api, count=1)
    assert_error(redrive(api, **body), 400, fragment)
    assert api.get("/v2/queues/dlq/stats").json["messages"]["total"] == 1


def test_a_body_that_is_not_an_object_is_400(api):
    assert_error(api.post("/v2/queues/dlq/redrive", json=[]), 400, "must be a JSON object")
    assert_error(api.post("/v2/queues/dlq/redrive", body="{", headers={
        "Content-Type": "application/json"}), 400)


def test_a_bad_queue_name_is_400(api):
    assert_error(redrive(api, queue="bad%20name"), 400)


def test_a_dead_letter_queue_that_does_not_exist_is_404(api):
    # A typo must not look like an empty queue (nor create anything).
    answer = redrive(api, queue="no-such-dlq")
    assert_error(answer, 404, "'no-such-dlq' does not exist")
    assert answer.json["title"] == "Queue not found"
    assert_error(redrive(api, queue="no-such-dlq", dry_run=True), 404)
    assert api.get("/v2/queues").json["queues"] == []


def test_an_empty_dead_letter_queue_is_200_with_nothing_matched(api):
    api.put("/v2/queues/dlq")
    assert redrive(api).json == {"matched": 0, "moved": 0, "to": {}, "created": [],
                                 "next": None}


def test_a_missing_destination_is_404_unless_create_says_so(api):
    posted = dead_lettered(api, count=1)
    answer = redrive(api, to="orders-retyr")
    assert_error(answer, 404, '"create": true')
    assert answer.json["title"] == "Queue not found"
    assert api.get("/v2/queues/dlq/stats").json["messages"]["total"] == 1
    assert "orders-retyr" not in [q["name"] for q in api.get("/v2/queues").json["queues"]]
    created = redrive(api, to="orders-retry", create=True)
    assert created.json["created"] == ["orders-retry"]
    assert api.get(f"/v2/queues/orders-retry/messages/{posted[0]}").status_code == 200
