"""The dead letter queue over HTTP."""

from __future__ import annotations

from zaqarclient.queues.v2.message import Message

from tests.api.helpers import assert_error

POLICY = {"_max_claim_count": 2, "_dead_letter_queue": "dlq"}


def claim_and_release(api, queue: str) -> list[str]:
    result = api.claim(queue)
    if result.status_code == 204:
        return []
    api.delete(result.headers["Location"])
    return [m["id"] for m in result.json["messages"]]


def test_exhausted_message_moves_to_the_dead_letter_queue(api, clock):
    api.put("/v2/queues/src", json={**POLICY, "_dead_letter_queue_messages_ttl": 7200})
    [poison] = api.post_messages("src", {"body": {"job": "poison"}, "ttl": 600})
    assert claim_and_release(api, "src") == [poison]
    clock.advance(10)
    assert claim_and_release(api, "src") == [poison]
    clock.advance(10)
    [fresh] = api.post_messages("src", {"body": {"job": "fine"}})
    # The third attempt moves it instead of delivering it, and fills the
    # batch with the next deliverable message.
    result = api.claim("src")
    assert [m["id"] for m in result.json["messages"]] == [fresh]

    assert_error(api.get(f"/v2/queues/src/messages/{poison}"), 404)
    stats = api.get("/v2/queues/src/stats").json["messages"]
    assert (stats["free"], stats["claimed"], stats["total"]) == (0, 1, 1)

    moved = api.get(f"/v2/queues/dlq/messages/{poison}", params={"include_history": "true"})
    assert moved.status_code == 200
    assert moved.json == {
        "id": poison, "href": f"/v2/queues/dlq/messages/{poison}",
        "ttl": 7200, "age": 0, "body": {"job": "poison"}, "claim_count": 2,
        "redrive_count": 0,
        "history": [{
            "queue": "src", "reason": "max_claim_count", "count": 1,
            "first_time": "2023-11-14T22:13:40Z", "last_time": "2023-11-14T22:13:40Z",
        }],
    }
    dlq_stats = api.get("/v2/queues/dlq/stats").json["messages"]
    assert (dlq_stats["free"], dlq_stats["total"]) == (1, 1)
    # It is free in the dead letter queue, and shows its history when claimed there.
    claim = api.post("/v2/queues/dlq/claims", params={"include_history": "true"}, json={})
    claimed = claim.json["messages"][0]
    assert (claimed["id"], claimed["claim_count"]) == (poison, 3)
    assert claimed["history"][0]["queue"] == "src"
    held = api.get(claim.headers["Location"], params={"include_history": "true"})
    assert held.json["messages"][0]["history"] == claimed["history"]
    listed = api.get("/v2/queues/dlq/messages",
                     params={"include_claimed": "true", "include_history": "true",
                             "echo": "true"})
    assert listed.json["messages"][0]["history"] == claimed["history"]
    assert "include_history=true" in listed.json["links"][0]["href"]


def test_history_is_opt_in_so_zaqar_clients_keep_working(api):
    api.put("/v2/queues/src", json={"_max_claim_count": 1, "_dead_letter_queue": "dlq"})
    [mid] = api.post_messages("src", {"body": 1})
    api.delete(api.claim("src").headers["Location"])
    assert api.claim("src").status_code == 204  # moved, nothing delivered
    shown = [
        api.get(f"/v2/queues/dlq/messages/{mid}").json,
        api.get("/v2/queues/dlq/messages", params={"echo": "true"}).json["messages"][0],
        api.get("/v2/queues/dlq/messages", params={"ids": mid}).json["messages"][0],
        api.claim("dlq").json["messages"][0],
    ]
    for message in shown:
        assert "history" not in message and "redrive_count" not in message
        # python-zaqarclient builds its Message from exactly these keys.
        assert Message(None, **message).claim_count >= 1


def test_setting_a_dead_letter_queue_creates_it(api):
    api.put("/v2/queues/src", json=POLICY)
    names = [q["name"] for q in api.get("/v2/queues").json["queues"]]
    assert names == ["dlq", "src"]
    api.put("/v2/queues/other")
    api.patch_metadata("other", [
        {"op": "add", "path": "/metadata/_dead_letter_queue", "value": "dlq2"},
    ])
    assert "dlq2" in [q["name"] for q in api.get("/v2/queues").json["queues"]]


def test_dead_letter_without_max_claim_count_is_inactive(api):
    api.put("/v2/queues/src", json={"_dead_letter_queue": "dlq"})
    [mid] = api.post_messages("src", {"body": 1})
    for count in range(1, 5):
        result = api.claim("src")
        assert result.json["messages"][0]["claim_count"] == count
        api.delete(result.headers["Location"])
    assert api.get(f"/v2/queues/src/messages/{mid}").status_code == 200


def test_pop_follows_the_dead_letter_rule(api):
    api.put("/v2/queues/src", json={"_max_claim_count": 1, "_dead_letter_queue": "dlq"})
    poison, ok = api.post_messages("src", {"body": "p"}, {"body": "ok"})
    assert claim_and_release(api, "src") == [poison, ok]
    popped = api.delete("/v2/queues/src/messages", params={"pop": 1}).json["messages"]
    assert popped == []  # both exhausted: moved, none delivered
    ids = [m["id"] for m in api.get("/v2/queues/dlq/messages",
                                    params={"echo": "true"}).json["messages"]]
    assert ids == [poison, ok]


def test_a_queue_cannot_be_its_own_dead_letter_queue(api):
    assert_error(api.put("/v2/queues/q", json={**POLICY, "_dead_letter_queue": "q"}), 409,
                 "own dead letter queue")
    assert api.get("/v2/queues").json["queues"] == []
    api.put("/v2/queues/q")
    ops = [{"op": "add", "path": "/metadata/_dead_letter_queue", "value": "q"}]
    assert_error(api.patch_metadata("q", ops), 409, "own dead letter queue")
    assert "_dead_letter_queue" not in api.get("/v2/queues/q").json


def test_dead_letter_cycles_are_refused(api):
    api.put("/v2/queues/a", json={"_dead_letter_queue": "b"})
    api.patch_metadata("b", [{"op": "add", "path": "/metadata/_dead_letter_queue",
                              "value": "c"}])
    ops = [{"op": "add", "path": "/metadata/_dead_letter_queue", "value": "a"}]
    assert_error(api.patch_metadata("c", ops), 409, "c -> a -> b -> c")
    # A new queue pointing into the chain is fine: the chain never returns to it.
    assert api.put("/v2/queues/x", json={"_dead_letter_queue": "a"}).status_code == 201


def test_bad_dead_letter_values_are_400(api):
    assert_error(api.put("/v2/queues/q", json={"_dead_letter_queue": "no spaces"}), 400,
                 "_dead_letter_queue")
    assert_error(api.put("/v2/queues/q", json={"_dead_letter_queue_messages_ttl": 10}), 400,
                 "_dead_letter_queue_messages_ttl must be between 60 and 1209600")


def test_dead_letter_expired_needs_a_dead_letter_queue(api):
    assert_error(api.put("/v2/queues/q", json={"_dead_letter_expired": True}), 400,
                 "_dead_letter_expired is true but the queue has no _dead_letter_queue")
    assert_error(api.put("/v2/queues/q", json={"_dead_letter_expired": "yes"}), 400,
                 "_dead_letter_expired must be true or false")
    assert api.put("/v2/queues/q", json={"_dead_letter_expired": True,
                                         "_dead_letter_queue": "dlq"}).status_code == 201
    # Removing the dead letter queue alone would leave the setting without effect.
    ops = [{"op": "remove", "path": "/metadata/_dead_letter_queue"}]
    assert_error(api.patch_metadata("q", ops), 400, "_dead_letter_expired")
    assert api.get("/v2/queues/q").json["_dead_letter_queue"] == "dlq"
    ops.append({"op": "remove", "path": "/metadata/_dead_letter_expired"})
    assert api.patch_metadata("q", ops).status_code == 200


def test_an_expired_message_moves_to_the_dead_letter_queue(api, storage, clock):
    api.put("/v2/queues/src", json={"_dead_letter_expired": True, "_dead_letter_queue": "dlq"})
    assert api.get("/v2/queues/src").json["_dead_letter_expired"] is True
    [mid] = api.post_messages("src", {"body": {"job": 1}, "ttl": 60})
    clock.advance(60)
    assert_error(api.get(f"/v2/queues/src/messages/{mid}"), 404)
    # The next claim on the source moves it (gc would too).
    assert api.claim("src").status_code == 204
    moved = api.get(f"/v2/queues/dlq/messages/{mid}", params={"include_history": "true"})
    assert moved.json["history"] == [{
        "queue": "src", "reason": "expired", "count": 1,
        "first_time": "2023-11-14T22:14:20Z", "last_time": "2023-11-14T22:14:20Z"}]
    assert (moved.json["claim_count"], moved.json["redrive_count"]) == (0, 0)
