"""Claims: create, get, renew, release, expiry."""

from __future__ import annotations

from tests.api.helpers import assert_error


def claim_id_of(result) -> str:
    return result.headers["Location"].rsplit("/", 1)[1]


def test_claim_returns_messages_with_claim_hrefs(api, clock):
    a, b, _ = api.post_messages("q", {"body": 1}, {"body": 2}, {"body": 3})
    result = api.claim("q", limit=2, ttl=120, grace=60)
    assert result.status_code == 201
    claim_id = claim_id_of(result)
    assert result.headers["Location"] == f"/v2/queues/q/claims/{claim_id}"
    assert set(result.json) == {"messages"}
    assert result.json["messages"] == [
        {"id": a, "href": f"/v2/queues/q/messages/{a}?claim_id={claim_id}",
         "ttl": 3600, "age": 0, "body": 1, "claim_count": 1},
        {"id": b, "href": f"/v2/queues/q/messages/{b}?claim_id={claim_id}",
         "ttl": 3600, "age": 0, "body": 2, "claim_count": 1},
    ]


def test_claim_extends_short_lived_messages(api):
    [mid] = api.post_messages("q", {"body": 1, "ttl": 60})
    result = api.claim("q", ttl=300, grace=100)
    # Its life now lasts exactly claim ttl + grace (the clock stands still).
    assert result.json["messages"][0]["ttl"] == 400
    assert api.get(f"/v2/queues/q/messages/{mid}").json["ttl"] == 400


def test_claim_with_nothing_free_is_204(api):
    assert api.claim("empty").status_code == 204
    api.post_messages("q", {"body": 1})
    assert api.claim("q").status_code == 201
    result = api.claim("q")
    assert result.status_code == 204
    assert result.text == ""


def test_claim_body_is_optional_and_nulls_take_defaults(api):
    api.post_messages("q", {"body": 1}, {"body": 2})
    first = api.post("/v2/queues/q/claims", params={"limit": 1})
    assert first.status_code == 201
    assert api.get(first.headers["Location"]).json["ttl"] == 300
    second = api.post("/v2/queues/q/claims", json={"ttl": None, "grace": None})
    assert api.get(second.headers["Location"]).json["ttl"] == 300


def test_claim_refuses_bad_values(api):
    api.post_messages("q", {"body": 1})
    url = "/v2/queues/q/claims"
    assert_error(api.post(url, json={"ttl": 59}), 400, "Claim ttl must be between 60 and 43200")
    assert_error(api.post(url, json={"ttl": 60, "grace": 43201}), 400, "Claim grace")
    assert_error(api.post(url, json={"ttl": "60"}), 400, "integer")
    assert_error(api.post(url, json=[60]), 400, "JSON object")
    assert_error(api.post(url, params={"limit": 0}, json={}), 400, "limit")
    assert_error(api.post(url, params={"limit": 21}, json={}), 400, "between 1 and 20")
    # Nothing was claimed by the refused requests.
    assert api.get("/v2/queues/q/stats").json["messages"]["claimed"] == 0


def test_get_claim(api, clock):
    [mid] = api.post_messages("q", {"body": {"k": "v"}})
    claim_id = claim_id_of(api.claim("q", ttl=100))
    clock.advance(30)
    result = api.get(f"/v2/queues/q/claims/{claim_id}")
    assert result.status_code == 200
    assert result.json == {
        "age": 30, "ttl": 100, "href": f"/v2/queues/q/claims/{claim_id}",
        "messages": [{
            "id": mid, "href": f"/v2/queues/q/messages/{mid}?claim_id={claim_id}",
            "ttl": 3600, "age": 30, "body": {"k": "v"}, "claim_count": 1,
        }],
    }


def test_unknown_claim_is_404(api):
    assert_error(api.get("/v2/queues/q/claims/nope"), 404)
    assert_error(api.patch("/v2/queues/q/claims/nope", json={"ttl": 60}), 404)
    assert api.delete("/v2/queues/q/claims/nope").status_code == 204


def test_claim_expires_with_the_clock(api, clock):
    [mid] = api.post_messages("q", {"body": 1})
    claim_id = claim_id_of(api.claim("q", ttl=60))
    clock.advance(59)
    assert api.get(f"/v2/queues/q/claims/{claim_id}").status_code == 200
    assert api.claim("q").status_code == 204
    clock.advance(1)
    assert_error(api.get(f"/v2/queues/q/claims/{claim_id}"), 404)
    again = api.claim("q")
    assert again.status_code == 201
    assert again.json["messages"][0]["id"] == mid
    assert again.json["messages"][0]["claim_count"] == 2


def test_renew_extends_the_claim(api, clock):
    api.post_messages("q", {"body": 1})
    claim_id = claim_id_of(api.claim("q", ttl=60))
    clock.advance(50)
    result = api.patch(f"/v2/queues/q/claims/{claim_id}", json={"ttl": 120, "grace": 60})
    assert result.status_code == 204
    clock.advance(100)
    claim = api.get(f"/v2/queues/q/claims/{claim_id}")
    assert claim.status_code == 200
    assert claim.json["ttl"] == 120
    # Renewing does not count as another claim.
    assert claim.json["messages"][0]["claim_count"] == 1
    assert_error(api.patch(f"/v2/queues/q/claims/{claim_id}", json={"ttl": 10}), 400,
                 "Claim ttl")


def test_release_frees_messages(api):
    [mid] = api.post_messages("q", {"body": 1})
    claim_id = claim_id_of(api.claim("q"))
    assert api.delete(f"/v2/queues/q/claims/{claim_id}").status_code == 204
    assert_error(api.get(f"/v2/queues/q/claims/{claim_id}"), 404)
    stats = api.get("/v2/queues/q/stats").json["messages"]
    assert (stats["free"], stats["claimed"]) == (1, 0)
    again = api.claim("q").json["messages"][0]
    assert (again["id"], again["claim_count"]) == (mid, 2)
