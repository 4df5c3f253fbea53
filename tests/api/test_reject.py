"""POST /v2/queues/{q}/messages/{id}/reject: codes, texts and what it does."""

from __future__ import annotations

import pytest

from tests.api.helpers import assert_error

DLQ = {"_dead_letter_queue": "dlq"}


def claimed(api, queue="q", count=1):
    """Post ``count`` messages, claim them; (ids, claim id)."""
    posted = api.post_messages(queue, *({"body": n, "ttl": 3600} for n in range(count)))
    result = api.claim(queue, limit=count)
    return posted, result.headers["Location"].rsplit("/", 1)[1]


def reject(api, message_id, claim_id=None, queue="q", **body):
    params = {} if claim_id is None else {"claim_id": claim_id}
    return api.post(f"/v2/queues/{queue}/messages/{message_id}/reject", params=params,
                    json=body or None)


def history(api, queue, message_id):
    return api.get(f"/v2/queues/{queue}/messages/{message_id}",
                   params={"include_history": "true"}).json["history"]


def test_terminal_reject_moves_to_the_dead_letter_queue_with_its_description(api):
    api.put("/v2/queues/q", json=DLQ)
    (message_id,), claim_id = claimed(api)
    assert reject(api, message_id, claim_id, description="KeyError: 'order_id'").status_code == 204
    assert api.get(f"/v2/queues/q/messages/{message_id}").status_code == 404
    [entry] = history(api, "dlq", message_id)
    assert (entry["queue"], entry["reason"], entry["description"]) == (
        "q", "rejected", "KeyError: 'order_id'")
    assert api.get("/v2/queues/dlq/stats").json["messages"]["free"] == 1


def test_each_reject_along_a_chain_keeps_its_description(api, clock):
    api.put("/v2/queues/q", json=DLQ)
    api.patch_metadata("dlq", [{"op": "add", "path": "/metadata/_dead_letter_queue",
                                "value": "dlq2"}])
    (message_id,), claim_id = claimed(api)
    assert reject(api, message_id, claim_id, description="first").status_code == 204
    clock.advance(1)
    again = api.claim("dlq").headers["Location"].rsplit("/", 1)[1]
    assert reject(api, message_id, again, queue="dlq", description="second").status_code == 204
    entries = history(api, "dlq2", message_id)
    assert [(e["queue"], e["reason"], e["description"]) for e in entries] == [
        ("dlq", "rejected", "second"), ("q", "rejected", "first")]


def test_terminal_reject_without_a_dead_letter_queue_is_409_and_keeps_the_message(api):
    (message_id,), claim_id = claimed(api)
    assert_error(reject(api, message_id, claim_id, description="boom"), 409,
                 "has no _dead_letter_queue")
    shown = api.get(f"/v2/queues/q/messages/{message_id}").json
    assert f"claim_id={claim_id}" in shown["href"]


def test_retry_reject_makes_it_claimable_after_retry_after(api, clock):
    (message_id,), claim_id = claimed(api)
    assert reject(api, message_id, claim_id, retry_after=20, description="busy").status_code == 204
    stats = api.get("/v2/queues/q/stats").json["messages"]
    assert (stats["free"], stats["claimed"], stats["delayed"], stats["total"]) == (1, 0, 1, 1)
    clock.advance(19)
    assert api.claim("q").status_code == 204
    clock.advance(1)
    assert [m["id"] for m in api.claim("q").json["messages"]] == [message_id]


def test_retry_reject_without_a_dead_letter_queue_is_fine(api):
    (message_id,), claim_id = claimed(api)
    assert reject(api, message_id, claim_id, retry_after=0).status_code == 204
    assert [m["id"] for m in api.claim("q").json["messages"]] == [message_id]


def test_without_claim_id_a_claimed_message_is_403(api):
    api.put("/v2/queues/q", json=DLQ)
    (message_id,), _ = claimed(api)
    assert_error(reject(api, message_id, retry_after=1), 403, "give its claim id to reject it")


def test_without_claim_id_a_free_message_is_400(api):
    (message_id,) = api.post_messages("q", {"body": 1})
    assert_error(reject(api, message_id, retry_after=1), 400,
                 "Only the holder of the live claim on a message may reject it")


@pytest.mark.parametrize("claim_id", ["f" * 32, "not/an-id!"])
def test_a_claim_that_does_not_hold_it_is_400(api, claim_id):
    api.put("/v2/queues/q", json=DLQ)
    (message_id,), _ = claimed(api)
    assert_error(reject(api, message_id, claim_id, retry_after=1), 400)
    assert_error(reject(api, message_id, claim_id), 400)
    assert api.get("/v2/queues/dlq/stats").json["messages"]["total"] == 0


def test_an_expired_claim_may_not_reject(api, clock):
    api.put("/v2/queues/q", json=DLQ)
    (message_id,), claim_id = claimed(api)
    clock.advance(60)
    assert_error(reject(api, message_id, claim_id), 400, "does not hold message")
    assert api.get("/v2/queues/dlq/stats").json["messages"]["total"] == 0


def test_a_missing_message_is_404(api):
    _, claim_id = claimed(api)
    assert_error(reject(api, "0" * 32, claim_id, retry_after=1), 404)
    assert_error(reject(api, "bad*id", claim_id, retry_after=1), 404)


@pytest.mark.parametrize(("body", "fragment"), [
    ({"retry_after": -1}, "retry_after must be between 0 and 900"),
    ({"retry_after": 901}, "retry_after must be between 0 and 900"),
    ({"retry_after": "5"}, "retry_after must be an integer"),
    ({"description": 5}, "description must be a string"),
    ({"description": "x" * 1025}, "may not be more than 1024 characters long, got 1025"),
    ({"reason": "x"}, 'may only hold "description" and "retry_after"'),
])
def test_bad_bodies_are_400_and_change_nothing(api, body, fragment):
    api.put("/v2/queues/q", json=DLQ)
    (message_id,), claim_id = claimed(api)
    assert_error(reject(api, message_id, claim_id, **body), 400, fragment)
    assert api.get("/v2/queues/q/stats").json["messages"]["claimed"] == 1


def test_a_body_that_is_not_an_object_is_400(api):
    (message_id,), claim_id = claimed(api)
    result = api.post(f"/v2/queues/q/messages/{message_id}/reject",
                      params={"claim_id": claim_id}, json=[1])
    assert_error(result, 400, "The reject body")


def test_a_description_of_1024_characters_is_kept_whole(api):
    api.put("/v2/queues/q", json=DLQ)
    (message_id,), claim_id = claimed(api)
    text = "é" * 1024
    assert reject(api, message_id, claim_id, description=text).status_code == 204
    assert history(api, "dlq", message_id)[0]["description"] == text


def test_retry_after_null_waits_for_the_queues_backoff(api, clock):
    api.put("/v2/queues/q", json={**DLQ, "_retry_delay": 40, "_retry_max_delay": 40})
    (message_id,), claim_id = claimed(api)
    assert reject(api, message_id, claim_id, retry_after=None).status_code == 204
    assert api.get("/v2/queues/dlq/stats").json["messages"]["total"] == 0
    assert api.get("/v2/queues/q/stats").json["messages"]["delayed"] == 1
    clock.advance(40)  # at most 40 s (jitter only shortens it)
    assert [m["id"] for m in api.claim("q").json["messages"]] == [message_id]


def test_retry_after_null_on_a_queue_without_backoff_frees_at_once(api):
    (message_id,), claim_id = claimed(api)
    assert reject(api, message_id, claim_id, retry_after=None).status_code == 204
    assert [m["id"] for m in api.claim("q").json["messages"]] == [message_id]
