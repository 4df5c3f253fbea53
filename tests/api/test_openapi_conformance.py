"""Every endpoint of the running app answers as api-ref/openapi.yaml documents.

Each call goes through CheckedClient, which fails the test when the
response (status, headers, body) is not what the document allows for that
operation, or when the request's validity per the document is not what the
test says (``request_valid=False`` marks a request meant to be bad: the
document must refuse it too). The tests also assert the behaviour itself,
so a response that conforms but is wrong still fails.

Pools, flavors and per-pool health (pooling on) are checked in
tests/pooling/test_openapi_pools.py.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import falcon
import falcon.testing
import pytest

from tests.openapi_contract import JSON_PATCH, CheckedClient

DLQ_POLICY = {"_max_claim_count": 1, "_dead_letter_queue": "dlq"}


@pytest.fixture
def client(app: falcon.App, project: str) -> CheckedClient:
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    return CheckedClient(falcon.testing.TestClient(app), headers=headers)


@pytest.fixture
def other(client: CheckedClient) -> CheckedClient:
    """Another client (Client-ID) in the same project, to see messages without echo."""
    return CheckedClient(client.client, headers={**client.headers, "Client-ID": str(uuid.uuid4())})


def patch_metadata(client: CheckedClient, queue: str, ops: list[dict[str, Any]],
                   **kwargs: Any) -> falcon.testing.Result:
    return client.patch(f"/v2/queues/{queue}", body=json.dumps(ops),
                        headers={"Content-Type": JSON_PATCH}, **kwargs)


def post(client: CheckedClient, queue: str, *bodies: Any, **extra: Any) -> list[str]:
    result = client.post(f"/v2/queues/{queue}/messages",
                         json={"messages": [{"body": b, **extra} for b in bodies]})
    assert result.status_code == 201, result.text
    return [href.rsplit("/", 1)[1] for href in result.json["resources"]]


def claim(client: CheckedClient, queue: str, limit: int = 10) -> falcon.testing.Result:
    return client.post(f"/v2/queues/{queue}/claims", params={"limit": limit},
                       json={"ttl": 60, "grace": 60})


def claim_id_of(result: falcon.testing.Result) -> str:
    return result.headers["location"].rsplit("/", 1)[1]


# -- queues ------------------------------------------------------------------


def test_queue_lifecycle(client: CheckedClient) -> None:
    created = client.put("/v2/queues/orders", json={"description": "paid orders"})
    assert created.status_code == 201
    assert created.headers["location"] == "/v2/queues/orders"
    assert client.put("/v2/queues/orders", json={"other": 1}).status_code == 204
    shown = client.get("/v2/queues/orders").json
    assert shown["description"] == "paid orders" and "other" not in shown
    assert client.delete("/v2/queues/orders").status_code == 204
    assert client.delete("/v2/queues/orders").status_code == 204


def test_queue_put_without_body(client: CheckedClient) -> None:
    assert client.put("/v2/queues/bare").status_code == 201


def test_never_created_queue_shows_reserved_defaults(client: CheckedClient) -> None:
    shown = client.get("/v2/queues/lazy").json
    assert shown["_default_message_ttl"] == 3600
    assert "_max_claim_count" not in shown  # unset keys without a default stay out


def test_queue_with_dead_letter_policy(client: CheckedClient) -> None:
    metadata = {**DLQ_POLICY, "_dead_letter_queue_messages_ttl": 7200}
    assert client.put("/v2/queues/src", json=metadata).status_code == 201
    assert client.get("/v2/queues/src").json["_dead_letter_queue"] == "dlq"


def test_queue_list(client: CheckedClient) -> None:
    for name in ("q-a", "q-b", "q-c"):
        client.put(f"/v2/queues/{name}", json={"n": name})
    page = client.get("/v2/queues", params={"limit": 2, "detailed": True,
                                            "with_count": True}).json
    assert [q["name"] for q in page["queues"]] == ["q-a", "q-b"]
    assert page["queues"][0]["metadata"]["n"] == "q-a"
    assert page["count"] == 3
    next_href = page["links"][0]["href"]
    rest = client.get(next_href).json
    assert [q["name"] for q in rest["queues"]] == ["q-c"]
    assert client.get("/v2/queues", params={"name": "b"}).json["queues"][0]["name"] == "q-b"


def test_queue_list_with_a_metadata_filter(client: CheckedClient) -> None:
    client.put("/v2/queues/q-ops", json={"team": "ops"})
    client.put("/v2/queues/q-dev", json={"team": "dev"})
    page = client.get("/v2/queues", params={"team": "ops", "with_count": True}).json
    assert [q["name"] for q in page["queues"]] == ["q-ops"] and page["count"] == 1


def test_empty_queue_list(client: CheckedClient) -> None:
    assert client.get("/v2/queues").json["queues"] == []


def test_queue_list_limit_out_of_range(client: CheckedClient) -> None:
    result = client.get("/v2/queues", params={"limit": 21}, request_valid=False)
    assert result.status_code == 400


def test_patch_metadata(client: CheckedClient) -> None:
    client.put("/v2/queues/p", json={"colour": "red"})
    result = patch_metadata(client, "p", [
        {"op": "replace", "path": "/metadata/colour", "value": "blue"},
        {"op": "add", "path": "/metadata/_max_claim_count", "value": 3},
    ])
    assert result.status_code == 200, result.text
    assert result.json["colour"] == "blue" and result.json["_max_claim_count"] == 3


def test_patch_with_wrong_content_type_is_415(client: CheckedClient) -> None:
    client.put("/v2/queues/p")
    ops = [{"op": "add", "path": "/metadata/a", "value": 1}]
    result = client.patch("/v2/queues/p", json=ops, request_valid=False)
    assert result.status_code == 415


def test_patch_of_missing_queue_is_404(client: CheckedClient) -> None:
    result = patch_metadata(client, "ghost", [{"op": "add", "path": "/metadata/a", "value": 1}])
    assert result.status_code == 404


def test_patch_replacing_absent_key_is_409(client: CheckedClient) -> None:
    client.put("/v2/queues/p")
    result = patch_metadata(client, "p", [{"op": "replace", "path": "/metadata/nope",
                                           "value": 1}])
    assert result.status_code == 409


def test_bad_reserved_metadata_is_400(client: CheckedClient) -> None:
    for metadata in ({"_max_claim_count": 0}, {"_dead_letter_queue_messages_ttl": 59},
                     {"_dead_letter_queue": "no spaces allowed"}):
        result = client.put("/v2/queues/bad-meta", json=metadata, request_valid=False)
        assert result.status_code == 400, metadata


def test_own_dead_letter_queue_is_409(client: CheckedClient) -> None:
    result = client.put("/v2/queues/self", json={**DLQ_POLICY, "_dead_letter_queue": "self"})
    assert result.status_code == 409


def test_dead_letter_cycle_is_409(client: CheckedClient) -> None:
    client.put("/v2/queues/a", json={**DLQ_POLICY, "_dead_letter_queue": "b"})
    client.put("/v2/queues/b")
    result = patch_metadata(client, "b", [
        {"op": "add", "path": "/metadata/_max_claim_count", "value": 2},
        {"op": "add", "path": "/metadata/_dead_letter_queue", "value": "a"},
    ])
    assert result.status_code == 409
    assert "a" in result.json["description"]


def test_stats(client: CheckedClient, other: CheckedClient) -> None:
    assert client.get("/v2/queues/s/stats").json["messages"]["total"] == 0
    post(client, "s", 1, 2, 3)
    claim(other, "s", limit=1)
    counts = client.get("/v2/queues/s/stats").json["messages"]
    assert (counts["free"], counts["claimed"], counts["total"]) == (2, 1, 3)
    assert counts["oldest"]["href"].startswith("/v2/queues/s/messages/")


def test_purge(client: CheckedClient) -> None:
    post(client, "pg", 1, 2)
    assert client.post("/v2/queues/pg/purge").status_code == 204
    assert client.get("/v2/queues/pg/stats").json["messages"]["total"] == 0
    post(client, "pg", 3)
    result = client.post("/v2/queues/pg/purge", json={"resource_types": ["messages"]})
    assert result.status_code == 204
    assert client.get("/v2/queues/pg/stats").json["messages"]["total"] == 0


def test_purge_of_unknown_resource_type_is_400(client: CheckedClient) -> None:
    result = client.post("/v2/queues/pg/purge", json={"resource_types": ["claims"]},
                         request_valid=False)
    assert result.status_code == 400


# -- messages ----------------------------------------------------------------


def test_post_and_list_messages(client: CheckedClient, other: CheckedClient) -> None:
    result = client.post("/v2/queues/m/messages", json={"messages": [
        {"body": {"event": "paid"}, "ttl": 300}, {"body": "two", "delay": 0}]})
    assert result.status_code == 201
    assert result.headers["location"].startswith("/v2/queues/m/messages?ids=")
    assert client.get("/v2/queues/m/messages").json["messages"] == []  # echo off
    listed = other.get("/v2/queues/m/messages", params={"limit": 1}).json
    assert listed["messages"][0]["body"] == {"event": "paid"}
    assert listed["messages"][0]["claim_count"] == 0
    rest = other.get(listed["links"][0]["href"]).json
    assert [m["body"] for m in rest["messages"]] == ["two"]
    echoed = client.get("/v2/queues/m/messages", params={
        "echo": True, "include_claimed": True, "include_delayed": True}).json
    assert len(echoed["messages"]) == 2


def test_get_messages_by_ids(client: CheckedClient) -> None:
    ids = post(client, "m", 1, 2, 3)
    result = client.get("/v2/queues/m/messages", params={"ids": ",".join(ids[:2])})
    assert result.status_code == 200, result.text
    assert sorted(m["id"] for m in result.json["messages"]) == sorted(ids[:2])


def test_get_messages_by_unknown_ids_is_404(client: CheckedClient) -> None:
    result = client.get("/v2/queues/m/messages", params={"ids": "nope1,nope2"})
    assert result.status_code == 404


def test_get_and_delete_one_message(client: CheckedClient) -> None:
    (message_id,) = post(client, "m", {"k": "v"})
    shown = client.get(f"/v2/queues/m/messages/{message_id}").json
    assert shown["body"] == {"k": "v"} and shown["claim_count"] == 0
    assert client.delete(f"/v2/queues/m/messages/{message_id}").status_code == 204
    assert client.get(f"/v2/queues/m/messages/{message_id}").status_code == 404
    assert client.delete(f"/v2/queues/m/messages/{message_id}").status_code == 204


def test_delete_claimed_message(client: CheckedClient) -> None:
    (message_id,) = post(client, "m", 1)
    claimed = claim(client, "m")
    claim_id = claim_id_of(claimed)
    path = f"/v2/queues/m/messages/{message_id}"
    assert client.delete(path).status_code == 403
    assert client.delete(path, params={"claim_id": "not-the-claim"}).status_code == 400
    assert client.delete(claimed.json["messages"][0]["href"]).status_code == 204
    assert client.delete(path, params={"claim_id": claim_id}).status_code == 204


def test_bulk_delete_by_ids(client: CheckedClient) -> None:
    ids = post(client, "m", 1, 2, 3)
    result = client.delete("/v2/queues/m/messages", params={"ids": ",".join(ids[:2])})
    assert result.status_code == 204
    left = client.get("/v2/queues/m/messages", params={"echo": True}).json["messages"]
    assert [m["id"] for m in left] == ids[2:]


def test_bulk_delete_with_claim_ids(client: CheckedClient) -> None:
    ids = post(client, "m", 1, 2)
    claim_id = claim_id_of(claim(client, "m", limit=1))
    result = client.delete("/v2/queues/m/messages",
                           params={"ids": ",".join(ids), "claim_ids": claim_id})
    assert result.status_code == 204
    left = client.get("/v2/queues/m/messages",
                      params={"echo": True, "include_claimed": True}).json["messages"]
    assert [m["id"] for m in left] == ids[1:]  # only the claimed one was deleted


def test_pop(client: CheckedClient) -> None:
    post(client, "m", 1, 2, 3)
    popped = client.delete("/v2/queues/m/messages", params={"pop": 2})
    assert popped.status_code == 200
    assert [m["body"] for m in popped.json["messages"]] == [1, 2]
    assert all(m["claim_count"] == 1 for m in popped.json["messages"])


def test_delete_with_both_ids_and_pop_is_400(client: CheckedClient) -> None:
    # The document cannot express "exactly one of"; it says so in words.
    result = client.delete("/v2/queues/m/messages", params={"ids": "a", "pop": 1})
    assert result.status_code == 400


def test_pop_over_limit_is_400(client: CheckedClient) -> None:
    result = client.delete("/v2/queues/m/messages", params={"pop": 21}, request_valid=False)
    assert result.status_code == 400


def test_oversized_post_is_400(client: CheckedClient) -> None:
    body = "x" * 262144  # with the envelope, over limits.max_messages_post_size
    result = client.post("/v2/queues/m/messages", json={"messages": [{"body": body}]})
    assert result.status_code == 400
    assert "too large" in result.json["description"]


def test_post_over_the_transport_cap_is_400(client: CheckedClient) -> None:
    body = "x" * 1048577
    result = client.post("/v2/queues/m/messages", json={"messages": [{"body": body}]})
    assert result.status_code == 400
    assert result.json["title"] == "Request body too large"


def test_post_has_no_message_count_limit(client: CheckedClient) -> None:
    # Zaqar limits a post by size only; zq follows.
    assert len(post(client, "m", *range(25))) == 25


def test_post_breaking_documented_limits_is_400(client: CheckedClient) -> None:
    for document in ({"messages": [{"body": 1, "ttl": 59}]},
                     {"messages": [{"body": 1, "delay": 901}]},
                     {"messages": []},
                     {"messages": [{"ttl": 60}]}):
        result = client.post("/v2/queues/m/messages", json=document, request_valid=False)
        assert result.status_code == 400, document


def test_form_encoded_body_is_400(client: CheckedClient) -> None:
    result = client.post("/v2/queues/m/messages", body="messages=1",
                         headers={"Content-Type": "application/x-www-form-urlencoded"},
                         request_valid=False)
    assert result.status_code == 400


# -- claims ------------------------------------------------------------------


def test_claim_lifecycle(client: CheckedClient, clock: Any) -> None:
    post(client, "c", 1, 2)
    created = claim(client, "c", limit=5)
    assert created.status_code == 201
    assert len(created.json["messages"]) == 2
    assert all(m["claim_count"] == 1 for m in created.json["messages"])
    assert "?claim_id=" in created.json["messages"][0]["href"]
    location = created.headers["location"]
    shown = client.get(location).json
    assert shown["href"] == location and len(shown["messages"]) == 2
    assert client.patch(location, json={"ttl": 120, "grace": 60}).status_code == 204
    assert client.delete(location).status_code == 204
    assert client.get(location).status_code == 404
    assert client.delete(location).status_code == 204


def test_claim_without_body_and_nothing_free(client: CheckedClient) -> None:
    assert client.post("/v2/queues/empty/claims").status_code == 204


def test_missing_claim_is_404(client: CheckedClient) -> None:
    path = "/v2/queues/c/claims/no-such-claim"
    assert client.get(path).status_code == 404
    assert client.patch(path, json={"ttl": 60}).status_code == 404


def test_expired_claim_is_404(client: CheckedClient, clock: Any) -> None:
    post(client, "c", 1)
    location = claim(client, "c").headers["location"]
    clock.advance(61)
    assert client.get(location).status_code == 404


def test_claim_out_of_range_is_400(client: CheckedClient) -> None:
    post(client, "c", 1)
    assert client.post("/v2/queues/c/claims", params={"limit": 21},
                       request_valid=False).status_code == 400
    assert client.post("/v2/queues/c/claims", json={"ttl": 59},
                       request_valid=False).status_code == 400
    assert client.post("/v2/queues/c/claims", json={"grace": 43201},
                       request_valid=False).status_code == 400


def test_dead_lettered_message_carries_history(client: CheckedClient) -> None:
    client.put("/v2/queues/src", json=DLQ_POLICY)
    (message_id,) = post(client, "src", {"poison": True})
    location = claim(client, "src").headers["location"]
    client.delete(location)  # released: free again, claim_count stays 1
    assert claim(client, "src").status_code == 204  # moved instead of delivered
    assert client.get(f"/v2/queues/src/messages/{message_id}").status_code == 404
    shown = client.get(f"/v2/queues/dlq/messages/{message_id}").json
    assert "history" not in shown  # opt-in: python-zaqarclient rejects unknown keys
    moved = client.get(f"/v2/queues/dlq/messages/{message_id}",
                       params={"include_history": "true"}).json
    assert moved["claim_count"] == 1
    assert moved["history"][0]["queue"] == "src"
    assert moved["history"][0]["reason"] == "max_claim_count"
    reclaimed = client.post("/v2/queues/dlq/claims", params={"include_history": "true"},
                            json={"ttl": 60, "grace": 60})
    assert reclaimed.json["messages"][0]["history"][0]["count"] == 1


def test_terminal_reject(client: CheckedClient) -> None:
    client.put("/v2/queues/src", json={"_dead_letter_queue": "dlq"})
    (message_id,) = post(client, "src", {"poison": True})
    claim_id = claim_id_of(claim(client, "src"))
    path = f"/v2/queues/src/messages/{message_id}/reject"
    result = client.post(path, params={"claim_id": claim_id},
                         json={"description": "KeyError: 'order_id'"})
    assert result.status_code == 204
    moved = client.get(f"/v2/queues/dlq/messages/{message_id}",
                       params={"include_history": "true"}).json
    assert moved["history"][0]["reason"] == "rejected"


def test_retry_reject_and_stats_delayed(client: CheckedClient) -> None:
    (message_id,) = post(client, "m", 1)
    claim_id = claim_id_of(claim(client, "m"))
    result = client.post(f"/v2/queues/m/messages/{message_id}/reject",
                         params={"claim_id": claim_id}, json={"retry_after": 30})
    assert result.status_code == 204
    stats = client.get("/v2/queues/m/stats").json["messages"]
    assert (stats["free"], stats["claimed"], stats["delayed"]) == (1, 0, 1)


def test_reject_errors(client: CheckedClient) -> None:
    (message_id,) = post(client, "m", 1)
    path = f"/v2/queues/m/messages/{message_id}/reject"
    claim_id = claim_id_of(claim(client, "m"))
    assert client.post(path, json={"retry_after": 1}).status_code == 403
    assert client.post(path, params={"claim_id": "f" * 32},
                       json={"retry_after": 1}).status_code == 400
    assert client.post(path, params={"claim_id": claim_id}, json={"retry_after": 901},
                       request_valid=False).status_code == 400
    assert client.post(path, params={"claim_id": claim_id}, json={"description": "x" * 1025},
                       request_valid=False).status_code == 400
    assert client.post(path, params={"claim_id": claim_id}, json={"reason": "x"},
                       request_valid=False).status_code == 400
    assert client.post(path, params={"claim_id": claim_id}).status_code == 409
    assert client.post("/v2/queues/m/messages/" + "0" * 32 + "/reject",
                       params={"claim_id": claim_id}, json={"retry_after": 1}).status_code == 404


def test_consumers_and_a_suspected_claim(client: CheckedClient, clock: Any) -> None:
    client.put("/v2/queues/m", json={"_suspect_lapsed_consumers": True})
    post(client, "m", 1, 2)
    lapsed = claim_id_of(claim(client, "m", limit=1))
    clock.advance(61)
    refused = claim(client, "m")
    assert refused.status_code == 204
    assert refused.headers["X-Zq-Suspected"] == lapsed
    shown = client.get("/v2/queues/m/consumers").json["consumers"]
    assert [(c["client_id"], c["lapsed_claims"], c["suspected"]) for c in shown] == [
        (client.headers["Client-ID"], 1, True)]
    assert client.get("/v2/queues/never/consumers").json == {"consumers": []}
    assert client.put("/v2/queues/n", json={"_suspect_lapsed_consumers": "yes"},
                      request_valid=False).status_code == 400


# -- operations and common errors ---------------------------------------------


def test_ping(client: CheckedClient, storage: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert client.get("/v2/ping").status_code == 204
    assert client.head("/v2/ping").status_code == 204
    monkeypatch.setattr(storage, "ping", lambda: False)
    assert client.get("/v2/ping").status_code == 503
    assert client.head("/v2/ping").status_code == 503


def test_health(client: CheckedClient) -> None:
    assert client.get("/v2/health").status_code == 403
    result = client.get("/v2/health", headers={"X-Roles": "admin"})
    assert result.status_code == 200
    assert result.json["storage_reachable"] is True


def test_home_document(client: CheckedClient) -> None:
    home = client.get("/v2", headers={"Client-ID": None, "X-Project-ID": None})
    assert "rel/queue" in home.json["resources"]


def test_versions_document(client: CheckedClient) -> None:
    versions = client.get("/", headers={"Client-ID": None, "X-Project-ID": None})
    assert versions.status_code == 300
    assert [v["id"] for v in versions.json["versions"]] == ["2"]


@pytest.mark.parametrize(
    "headers",
    [{"Client-ID": "not-a-uuid"}, {"Client-ID": None}, {"X-Project-ID": None},
     {"X-Project-ID": "p" * 257}],
    ids=["malformed-client-id", "missing-client-id", "missing-project", "long-project"],
)
def test_bad_headers_are_400(client: CheckedClient, headers: dict[str, Any]) -> None:
    result = client.get("/v2/queues/q", headers=headers, request_valid=False)
    assert result.status_code == 400


@pytest.mark.parametrize("name", ["bad~name", "q" * 65])
def test_bad_queue_name_is_400(client: CheckedClient, name: str) -> None:
    for method in ("GET", "PUT", "DELETE"):
        result = client.request(method, f"/v2/queues/{name}", request_valid=False)
        assert result.status_code == 400, method
    result = client.post(f"/v2/queues/{name}/messages", json={"messages": [{"body": 1}]},
                         request_valid=False)
    assert result.status_code == 400


def test_not_accepting_json_is_406(client: CheckedClient) -> None:
    result = client.get("/v2/queues/q", headers={"Accept": "text/html"})
    assert result.status_code == 406


def test_get_and_delete_by_a_single_id(client: CheckedClient) -> None:
    # One id needs no comma splitting: the ids mode works and conforms.
    (first, second) = post(client, "m", 1, 2)
    shown = client.get("/v2/queues/m/messages", params={"ids": first}).json
    assert [m["id"] for m in shown["messages"]] == [first]
    assert client.delete("/v2/queues/m/messages", params={"ids": first}).status_code == 204
    left = client.get("/v2/queues/m/messages", params={"echo": True}).json["messages"]
    assert [m["id"] for m in left] == [second]


def test_purge_body_without_resource_types_is_400(client: CheckedClient) -> None:
    result = client.post("/v2/queues/pg/purge", json={}, request_valid=False)
    assert result.status_code == 400


def test_renew_out_of_range_is_400(client: CheckedClient) -> None:
    post(client, "c", 1)
    location = claim(client, "c").headers["location"]
    assert client.patch(location, json={"ttl": 59}, request_valid=False).status_code == 400
    assert client.patch(location, json={"grace": 43201},
                        request_valid=False).status_code == 400


def test_page_limit_zero_is_400(client: CheckedClient) -> None:
    for path in ("/v2/queues", "/v2/queues/m/messages"):
        assert client.get(path, params={"limit": 0}, request_valid=False).status_code == 400
    assert client.delete("/v2/queues/m/messages", params={"pop": 0},
                         request_valid=False).status_code == 400


def test_empty_project_header_is_400(client: CheckedClient) -> None:
    result = client.get("/v2/queues", headers={"X-Project-ID": ""}, request_valid=False)
    assert result.status_code == 400


def test_metrics(client: CheckedClient) -> None:
    result = client.request("GET", "/metrics")
    assert result.status_code == 200
    assert "zq_messages_posted_total" in result.text


# -- subscriptions -----------------------------------------------------------


def test_subscription_lifecycle(client: CheckedClient) -> None:
    base = "/v2/queues/orders/subscriptions"
    created = client.post(base, json={"subscriber": "https://example.com/h", "ttl": 600,
                                      "options": {"a": 1}})
    assert created.status_code == 201
    assert created.headers["location"] == base
    sid = created.json["subscription_id"]
    again = client.post(base, json={"subscriber": "https://example.com/h"})
    assert (again.status_code, again.json) == (201, {"subscription_id": sid})
    shown = client.get(f"{base}/{sid}").json
    assert (shown["source"], shown["ttl"], shown["options"]) == ("orders", 600, {"a": 1})
    client.post(base, json={"subscriber": "mailto:ops@example.com"})
    page = client.get(base, params={"limit": 1}).json
    assert len(page["subscriptions"]) == 1 and page["links"][0]["rel"] == "next"
    assert client.patch(f"{base}/{sid}", json={"ttl": 900}).status_code == 204
    assert client.get(f"{base}/{sid}").json["ttl"] == 900
    assert client.put(f"{base}/{sid}/confirm", json={"confirmed": True}).status_code == 204
    conflict = client.post(base, json={"subscriber": "https://example.com/h"})
    assert conflict.status_code == 409
    taken = client.get(base).json["subscriptions"]
    other = next(s["id"] for s in taken if s["id"] != sid)
    assert client.patch(f"{base}/{other}",
                        json={"subscriber": "https://example.com/h"}).status_code == 409
    assert client.delete(f"{base}/{sid}").status_code == 204
    assert client.get(f"{base}/{sid}").status_code == 404
    assert client.put(f"{base}/{sid}/confirm", json={"confirmed": True}).status_code == 404
    assert client.patch(f"{base}/{sid}", json={"ttl": 900}).status_code == 404


def test_subscription_refusals(client: CheckedClient) -> None:
    base = "/v2/queues/orders/subscriptions"
    for document in ({"subscriber": "ftp://x"}, {"ttl": 60}, {"subscriber": "http://h", "ttl": 1},
                     {"subscriber": "http://h", "extra": 1}):
        result = client.post(base, json=document, request_valid=False)
        assert result.status_code == 400, document
    assert client.get(base, params={"limit": 21}, request_valid=False).status_code == 400
    sid = client.post(base, json={"subscriber": "http://h"}).json["subscription_id"]
    assert client.patch(f"{base}/{sid}", json={}, request_valid=False).status_code == 400
    assert client.put(f"{base}/{sid}/confirm", json={"confirmed": "yes"},
                      request_valid=False).status_code == 400


# -- redrive (zq) ---------------------------------------------------------------


def dead_lettered(client: CheckedClient, source: str, *bodies: Any) -> list[str]:
    """Messages posted to ``source`` and rejected into its dead letter queue ``dlq``."""
    client.put(f"/v2/queues/{source}", json={"_dead_letter_queue": "dlq"})
    posted = post(client, source, *bodies)
    claim_id = claim_id_of(claim(client, source, limit=len(bodies)))
    for message_id in posted:
        client.post(f"/v2/queues/{source}/messages/{message_id}/reject",
                    params={"claim_id": claim_id}, json={"description": "boom"})
    return posted


def test_redrive(client: CheckedClient) -> None:
    posted = dead_lettered(client, "src", 1, 2, 3)
    dry = client.post("/v2/queues/dlq/redrive", json={"dry_run": True, "limit": 2})
    assert dry.status_code == 200
    assert (dry.json["matched"], dry.json["moved"], dry.json["to"]) == (2, 0, {"src": 2})
    assert dry.json["next"] is not None
    result = client.post("/v2/queues/dlq/redrive",
                         json={"filter": {"reason": "rejected", "from": "src"}})
    assert result.json == {"matched": 3, "moved": 3, "to": {"src": 3}, "created": [],
                           "next": None}
    back = client.get(f"/v2/queues/src/messages/{posted[0]}",
                      params={"include_history": "true"}).json
    assert back["redrive_count"] == 1
    assert {h["reason"] for h in back["history"]} == {"rejected", "redriven"}
    empty = client.post("/v2/queues/dlq/redrive")
    assert empty.json == {"matched": 0, "moved": 0, "to": {}, "created": [], "next": None}


def test_redrive_errors(client: CheckedClient) -> None:
    dead_lettered(client, "src", 1)
    path = "/v2/queues/dlq/redrive"
    for bad in ({"limit": 201}, {"limit": 0}, {"dry_run": "yes"}, {"colour": 1},
                {"filter": {"reason": "bored"}}, {"filter": {"fingerprint": "XYZ"}},
                {"filter": {"ids": []}}, {"filter": {"since": 1}}, {"to": "a/b"},
                {"filter": {"dead_lettered_before": -1}}, {"marker": "abc"}):
        assert client.post(path, json=bad, request_valid=False).status_code == 400, bad
    assert client.post(path, json={"to": "dlq"}).status_code == 400
    assert client.post(path, json=[1], request_valid=False).status_code == 400
    assert client.post(path, json={"to": "nowhere"}).status_code == 404
    assert client.post("/v2/queues/no-such-dlq/redrive").status_code == 404
    made = client.post(path, json={"to": "nowhere", "create": True, "dry_run": True})
    assert made.json["created"] == ["nowhere"]
