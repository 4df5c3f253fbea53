"""Messages: post, list, get, delete, bulk delete, pop."""

from __future__ import annotations

import orjson

from tests.api.helpers import assert_error


def test_post_returns_resources_and_location(api):
    result = api.post("/v2/queues/q/messages", json={"messages": [
        {"body": {"b": 1, "a": [1, 2]}, "ttl": 300},
        {"body": "text"},
    ]})
    assert result.status_code == 201
    resources = result.json["resources"]
    assert len(resources) == 2
    ids = [r.rsplit("/", 1)[1] for r in resources]
    assert resources == [f"/v2/queues/q/messages/{i}" for i in ids]
    assert result.headers["Location"] == f"/v2/queues/q/messages?ids={ids[0]},{ids[1]}"


def test_message_representation(api, clock):
    [mid] = api.post_messages("q", {"body": {"b": 1, "a": {"z": None}}, "ttl": 300})
    clock.advance(42.7)
    result = api.get(f"/v2/queues/q/messages/{mid}")
    assert result.status_code == 200
    assert result.json == {
        "id": mid, "href": f"/v2/queues/q/messages/{mid}", "ttl": 300, "age": 42,
        "body": {"a": {"z": None}, "b": 1}, "claim_count": 0,
    }
    # The body is returned as stored: canonical JSON with sorted keys.
    assert '"body":{"a":{"z":null},"b":1}' in result.text


def test_post_applies_queue_then_config_defaults(api):
    [plain] = api.post_messages("q", {"body": 1})
    assert api.get(f"/v2/queues/q/messages/{plain}").json["ttl"] == 3600
    api.put("/v2/queues/d", json={"_default_message_ttl": 120, "_default_message_delay": 30})
    [mid] = api.post_messages("d", {"body": 1})
    assert api.get(f"/v2/queues/d/messages/{mid}").json["ttl"] == 120
    # The queue default delay applies: the message is not listed (nor claimable) yet.
    assert api.get("/v2/queues/d/messages", params={"echo": "true"}).json["messages"] == []
    assert api.claim("d").status_code == 204


def test_post_refuses_bad_documents(api):
    url = "/v2/queues/q/messages"
    assert_error(api.post(url, body="[{"), 400, "not valid JSON")
    assert_error(api.post(url, json=[{"body": 1}]), 400, '"messages"')
    assert_error(api.post(url, json={"messages": []}), 400, "at least one")
    assert_error(api.post(url, json={"messages": [{"ttl": 60}]}), 400, "body")
    assert_error(api.post(url, json={"messages": [{"body": 1, "ttl": 59}]}), 400,
                 "messages[0].ttl must be between 60 and 1209600")
    assert_error(api.post(url, json={"messages": [{"body": 1, "delay": 901}]}), 400,
                 "messages[0].delay must be between 0 and 900")
    assert_error(api.post(url, json={"messages": [{"body": 1, "ttl": "60"}]}), 400, "integer")
    assert_error(api.post("/v2/queues/bad!/messages", json={"messages": [{"body": 1}]}), 400,
                 "Queue name")
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 0


def test_post_size_caps(api):
    big = {"messages": [{"body": "x" * 262144}]}
    assert_error(api.post("/v2/queues/q/messages", json=big), 400, "too large")
    api.put("/v2/queues/small", json={"_max_messages_post_size": 100})
    doc = {"messages": [{"body": "x" * 100}]}
    assert_error(api.post("/v2/queues/small/messages", json=doc), 400, "at most 100")
    assert api.post("/v2/queues/small/messages",
                    json={"messages": [{"body": "x"}]}).status_code == 201


def test_list_hides_own_messages_unless_echo(api):
    mine = api.post_messages("q", {"body": "mine"})
    other = api.other_client()
    theirs = other.post_messages("q", {"body": "theirs"})
    listed = api.get("/v2/queues/q/messages").json["messages"]
    assert [m["id"] for m in listed] == theirs
    echoed = api.get("/v2/queues/q/messages", params={"echo": "true"}).json["messages"]
    assert [m["id"] for m in echoed] == mine + theirs


def test_list_claimed_and_delayed_filters(api):
    free, claimed = api.post_messages("q", {"body": 1}, {"body": 2})
    api.claim("q", limit=1)  # takes the first in queue order
    [delayed] = api.post_messages("q", {"body": 3, "delay": 60})
    params = {"echo": "true"}
    ids = [m["id"] for m in api.get("/v2/queues/q/messages", params=params).json["messages"]]
    assert ids == [claimed]
    params["include_claimed"] = "true"
    ids = [m["id"] for m in api.get("/v2/queues/q/messages", params=params).json["messages"]]
    assert ids == [free, claimed]
    params["include_delayed"] = "true"
    ids = [m["id"] for m in api.get("/v2/queues/q/messages", params=params).json["messages"]]
    assert ids == [free, claimed, delayed]


def test_list_pages_with_marker(api):
    ids = api.post_messages("q", *({"body": i} for i in range(5)))
    page = api.get("/v2/queues/q/messages", params={"echo": "true", "limit": 2})
    assert page.status_code == 200
    seen = [m["id"] for m in page.json["messages"]]
    while page.json["messages"]:
        [link] = page.json["links"]
        assert link["rel"] == "next" and "echo=true" in link["href"]
        page = api.get(link["href"])
        seen += [m["id"] for m in page.json["messages"]]
    assert seen == ids
    assert page.json == {"messages": [], "links": []}


def test_list_of_an_absent_queue_is_empty(api):
    assert api.get("/v2/queues/none/messages").json == {"messages": [], "links": []}


def test_list_refuses_bad_parameters(api):
    assert_error(api.get("/v2/queues/q/messages", params={"limit": 21}), 400, "between 1 and 20")
    assert_error(api.get("/v2/queues/q/messages", params={"echo": "maybe"}), 400, "echo")


def test_list_after_a_marker_no_page_gave_is_an_empty_page(api):
    # As Zaqar answers an unknown marker (it used to be a 400 here).
    api.post_messages("q", {"body": 1})
    result = api.get("/v2/queues/q/messages", params={"marker": "abc", "echo": "true"})
    assert result.status_code == 200, result.text
    assert result.json == {"messages": [], "links": []}


def test_get_by_ids(api):
    a, b = api.post_messages("q", {"body": 1}, {"body": 2})
    result = api.get("/v2/queues/q/messages", params={"ids": f"{b},{a},unknown"})
    assert result.status_code == 200
    assert [m["id"] for m in result.json["messages"]] == [a, b]
    assert set(result.json) == {"messages"}
    assert_error(api.get("/v2/queues/q/messages", params={"ids": "unknown"}), 404)
    too_many = ",".join(str(i) for i in range(21))
    assert_error(api.get("/v2/queues/q/messages", params={"ids": too_many}), 400, "ids")


def test_get_missing_or_expired_message_is_404(api, clock):
    assert_error(api.get("/v2/queues/q/messages/nope"), 404)
    [mid] = api.post_messages("q", {"body": 1, "ttl": 60})
    clock.advance(60)
    assert_error(api.get(f"/v2/queues/q/messages/{mid}"), 404)


def test_delete_free_message(api):
    [mid] = api.post_messages("q", {"body": 1})
    assert api.delete(f"/v2/queues/q/messages/{mid}").status_code == 204
    assert_error(api.get(f"/v2/queues/q/messages/{mid}"), 404)
    assert api.delete(f"/v2/queues/q/messages/{mid}").status_code == 204


def test_delete_claimed_message_needs_its_claim(api, clock):
    [mid] = api.post_messages("q", {"body": 1})
    claim = api.claim("q")
    href = claim.json["messages"][0]["href"]
    assert_error(api.delete(f"/v2/queues/q/messages/{mid}"), 403)
    wrong = api.delete(f"/v2/queues/q/messages/{mid}", params={"claim_id": "not-it"})
    assert_error(wrong, 400)
    assert api.get(f"/v2/queues/q/messages/{mid}").status_code == 200
    assert api.delete(href).status_code == 204
    assert_error(api.get(f"/v2/queues/q/messages/{mid}"), 404)


def test_delete_with_expired_claim_is_400(api, clock):
    [mid] = api.post_messages("q", {"body": 1})
    claim_id = api.claim("q", ttl=60).headers["Location"].rsplit("/", 1)[1]
    clock.advance(61)
    result = api.delete(f"/v2/queues/q/messages/{mid}", params={"claim_id": claim_id})
    assert_error(result, 400)
    # Free again: it can be deleted without a claim.
    assert api.delete(f"/v2/queues/q/messages/{mid}").status_code == 204


def test_bulk_delete_by_ids(api):
    a, b, c = api.post_messages("q", {"body": 1}, {"body": 2}, {"body": 3})
    assert api.delete("/v2/queues/q/messages", params={"ids": f"{a},{c}"}).status_code == 204
    remaining = api.get("/v2/queues/q/messages", params={"echo": "true"}).json["messages"]
    assert [m["id"] for m in remaining] == [b]


def test_bulk_delete_with_claim_ids_keeps_other_messages(api):
    a, b = api.post_messages("q", {"body": 1}, {"body": 2})
    claim_id = api.claim("q", limit=1).headers["Location"].rsplit("/", 1)[1]
    result = api.delete("/v2/queues/q/messages",
                        params={"ids": f"{a},{b}", "claim_ids": claim_id})
    assert result.status_code == 204
    assert_error(api.get(f"/v2/queues/q/messages/{a}"), 404)
    assert api.get(f"/v2/queues/q/messages/{b}").status_code == 200


def test_pop_takes_and_counts(api):
    a, b, c = api.post_messages("q", {"body": 1}, {"body": 2}, {"body": 3})
    result = api.delete("/v2/queues/q/messages", params={"pop": 2})
    assert result.status_code == 200
    popped = result.json["messages"]
    assert [m["id"] for m in popped] == [a, b]
    assert [m["body"] for m in popped] == [1, 2]
    assert all(m["claim_count"] == 1 for m in popped)
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 1
    assert api.delete("/v2/queues/q/messages", params={"pop": 5}).json["messages"][0]["id"] == c
    assert api.delete("/v2/queues/q/messages", params={"pop": 5}).json == {"messages": []}


def test_bulk_delete_refuses_bad_parameters(api):
    url = "/v2/queues/q/messages"
    assert_error(api.delete(url), 400, '"ids" or "pop"')
    assert_error(api.delete(url, params={"ids": "a", "pop": 1}), 400, '"ids" or "pop"')
    assert_error(api.delete(url, params={"pop": 0}), 400, "pop must be between 1 and 20")
    assert_error(api.delete(url, params={"pop": 21}), 400, "pop")


def test_body_of_every_json_type_round_trips(api):
    bodies = [None, True, 0, -1.5, "s", [], {}, {"nested": {"k": [1, {"x": "é"}]}}]
    ids = api.post_messages("q", *({"body": b} for b in bodies))
    got = api.get("/v2/queues/q/messages", params={"ids": ",".join(ids)}).json["messages"]
    assert [m["body"] for m in got] == bodies
    raw = api.get(f"/v2/queues/q/messages/{ids[-1]}").content
    assert orjson.loads(raw)["body"] == bodies[-1]
