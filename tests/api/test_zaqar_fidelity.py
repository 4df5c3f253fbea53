"""Behaviour that Zaqar 23 clients depend on, on every backend.

Each test names the Zaqar source it follows (openstack/zaqar); where zq
differs on purpose the test pins zq's behaviour and docs/compatibility.md
says why.
"""

from __future__ import annotations

import pytest

from tests.api.helpers import Api, assert_error
from tests.backends import backend_name, storage, storage_factory
from zq.config import Config

# This module's API runs on every selected backend, not only SQLite.
__all__ = ["backend_name", "storage", "storage_factory"]


# -- claimed messages keep their claim in the href --------------------------
# zaqar/transport/wsgi/v2_0/messages.py formats every read (by id, by ids,
# listing) with format_message_v1_1(message, base, message['claim_id']).


def test_a_claimed_message_read_any_way_carries_its_claim_id(api: Api, clock) -> None:
    ids = api.post_messages("q", {"body": 1, "ttl": 300}, {"body": 2, "ttl": 300})
    claim = api.claim("q", limit=1).json
    claim_id = claim["messages"][0]["href"].split("claim_id=")[1]
    claimed, free = ids
    base = "/v2/queues/q/messages"

    by_id = api.get(f"{base}/{claimed}").json
    by_ids = api.get(base, params={"ids": ",".join(ids)}).json["messages"]
    listed = api.other_client().get(base, params={"include_claimed": "true"}).json["messages"]
    expected = {claimed: f"{base}/{claimed}?claim_id={claim_id}", free: f"{base}/{free}"}
    assert by_id["href"] == expected[claimed]
    assert {m["id"]: m["href"] for m in by_ids} == expected
    assert {m["id"]: m["href"] for m in listed} == expected

    # The href is what a client deletes with: with the claim it is allowed.
    assert api.delete(f"{base}/{free}").status_code == 204
    assert api.delete(by_id["href"]).status_code == 204
    assert api.get(base, params={"ids": claimed}).status_code == 404

    # A claim that lapsed is no longer shown.
    other = api.post_messages("q", {"body": 3, "ttl": 300})[0]
    api.claim("q", limit=1, ttl=60)
    clock.advance(61)
    assert api.get(f"{base}/{other}").json["href"] == f"{base}/{other}"


# -- version discovery and the home document --------------------------------
# zaqar/transport/wsgi/version.py: GET / answers 300 with {"versions": [v2]};
# zaqar/transport/wsgi/v2_0/__init__.py holds VERSION, v2_0/homedoc.py the
# home document (application/json-home, Cache-Control max-age=86400).


def test_root_answers_300_with_the_versions_document(api: Api) -> None:
    result = api.client.simulate_get("/")  # no Client-ID or project needed
    assert result.status_code == 300
    assert result.headers["content-type"].startswith("application/json")
    assert result.json == {"versions": [{
        "id": "2",
        "status": "CURRENT",
        "updated": "2014-9-24T04:06:47Z",
        "media-types": [{"base": "application/json",
                         "type": "application/vnd.openstack.messaging-v2+json"}],
        "links": [{"href": "/v2/", "rel": "self"}],
    }]}


@pytest.mark.parametrize("path", ["/v2", "/v2/"])
def test_home_document_is_json_home(api: Api, path: str) -> None:
    result = api.get(path)
    assert result.status_code == 200
    assert result.headers["content-type"] == "application/json-home"
    assert result.headers["cache-control"] == "max-age=86400"
    resources = result.json["resources"]
    assert resources["rel/queues"]["href-template"].startswith("/v2/queues{?")
    assert resources["rel/message_delete"]["href-template"] == (
        "/v2/queues/{queue_name}/messages/{message_id}{?claim}")
    assert resources["rel/post_claim"]["hints"]["allow"] == ["POST"]
    assert resources["rel/ping"]["href-template"] == "/v2/ping"
    assert resources["rel/health"]["href"] == "/v2/health"
    assert "rel/pools" not in resources  # pooling is off on this server
    for rel, link in resources.items():
        assert set(link) <= {"href", "href-template", "href-vars", "hints"}, rel
        assert link["hints"]["formats"] == {"application/json": {}}, rel


def test_unknown_error_shape_kept_for_root_methods(api: Api) -> None:
    assert_error(api.client.simulate_post("/"), 405)


# -- status codes at the edges ----------------------------------------------


def test_form_content_type_without_a_body_is_accepted(api: Api) -> None:
    # zaqar/common/transport/wsgi/helpers.py
    # require_content_type_be_non_urlencoded refuses a form type only with a body.
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert api.put("/v2/queues/q", headers=form).status_code == 201
    refused = api.put("/v2/queues/r", headers=form, body="a=1")
    assert_error(refused, 400, "Form-encoded")
    assert api.get("/v2/queues", params={"name": "r"}).json["queues"] == []


@pytest.mark.parametrize("body", [" ", "\n\t "])
def test_a_whitespace_only_body_is_not_json(api: Api, body: str) -> None:
    # zaqar/transport/wsgi/v2_0/queues.py on_put parses any body sent
    # (Content-Length > 0): whitespace is "Request body could not be parsed".
    assert_error(api.put("/v2/queues/q", body=body), 400, "not valid JSON")
    assert api.get("/v2/queues").json["queues"] == []
    assert_error(api.post("/v2/queues/q/claims", body=body), 400, "not valid JSON")
    assert api.put("/v2/queues/q", body="").status_code == 201  # no body: fine


def test_bodies_over_a_limit_are_400_even_past_the_request_cap(api: Api) -> None:
    # zaqar/transport/validation.py queue_metadata_length and message_length:
    # 400 "too large". Past [limits] max_request_body zq refuses the body
    # before reading it, still with 400: python-zaqarclient
    # (zaqarclient/transport/base.py http_to_zaqar) raises on 400, not on 413.
    over = api.put("/v2/queues/q", json={"a": "x" * 70_000})
    assert_error(over, 400, "too large")
    huge = api.put("/v2/queues/q", json={"a": "x" * 1_100_000})
    assert_error(huge, 400, "at most")
    assert huge.json["title"] == "Request body too large"
    post = api.post("/v2/queues/q/messages", json={"messages": [{"body": "x" * 1_100_000}]})
    assert_error(post, 400, "at most")
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 0


@pytest.fixture
def config() -> Config:
    return Config().with_overrides(signed_urls={"secret_key": "fidelity-key-0123456789abcdef"})


def test_share_refuses_unknown_keys(api: Api) -> None:
    # zaqar/transport/wsgi/v2_0/urls.py: 400 "Unknown keys" beyond
    # methods, expires, paths (zq also takes python-zaqarclient's project_id).
    result = api.post("/v2/queues/q/share", json={"paths": ["messages"], "ttl": 60})
    assert_error(result, 400, "unknown keys ['ttl']")
    signed = api.post("/v2/queues/q/share", json={"paths": ["claims"],
                                                   "project_id": api.project})
    assert signed.status_code == 200
    assert signed.json["paths"] == ["/v2/queues/q/claims"]


@pytest.mark.parametrize("path", [
    "/", "/v2", "/v2/queues", "/v2/queues/q", "/v2/queues/q/stats",
    "/v2/queues/q/messages", "/v2/queues/q/messages/m", "/v2/queues/q/claims/c",
    "/v2/health",
])
def test_head_is_405_where_zaqar_v2_serves_no_head(api: Api, path: str) -> None:
    # Zaqar v2 resources define no on_head except ping (v2_0/ping.py).
    result = api.head(path)
    assert result.status_code == 405
    assert "HEAD" not in result.headers["allow"]
    assert api.head("/v2/ping").status_code == 204


# -- health ------------------------------------------------------------------
# zaqar/storage/mongodb/driver.py and sqlalchemy/driver.py _health: each
# report carries message_volume {free, claimed, total}.


def test_health_reports_the_message_volume(api: Api, clock) -> None:
    clock.advance(365 * 86400)  # what other tests left on the backend has expired
    admin = {"X-Roles": "admin"}
    api.post_messages("a", {"body": 1, "ttl": 600}, {"body": 2, "ttl": 600})
    api.post_messages("b", {"body": 3, "ttl": 600})
    api.claim("a", limit=1)
    health = api.get("/v2/health", headers=admin)
    assert health.status_code == 200
    assert health.json["storage_reachable"] is True
    assert health.json["message_volume"] == {"free": 2, "claimed": 1, "total": 3}
    assert_error(api.get("/v2/health"), 403, "admin")


# -- queue listing filters ---------------------------------------------------
# zaqar/transport/wsgi/v2_0/queues.py (and topic.py, the same code): every
# query parameter other than marker, limit, detailed, name (and with_count)
# is a metadata filter, its value an int when int() reads it.


def test_queue_listing_filters_by_metadata_and_name_and_pages(api: Api) -> None:
    for n in range(12):
        meta = {"team": "ops" if n % 4 == 1 else "dev", "tier": n % 2}
        assert api.put(f"/v2/queues/q{n:02d}", json=meta).status_code == 201
    seen, href, pages = [], "/v2/queues", 0
    params: dict | None = {"team": "ops", "limit": 2, "detailed": "true", "with_count": "true"}
    while True:
        body = api.get(href, params=params).json
        params = None
        if not body["queues"]:
            break
        pages += 1
        assert body["count"] == 3
        assert all(q["metadata"]["team"] == "ops" for q in body["queues"])
        seen += [q["name"] for q in body["queues"]]
        href = body["links"][0]["href"]
        assert "team=ops" in href and "limit=2" in href and "detailed=true" in href
    assert seen == ["q01", "q05", "q09"] and pages == 2

    # Booleans come back true/false whatever the request's spelling (Zaqar's link).
    href = api.get("/v2/queues", params={"limit": 1, "detailed": "True", "with_count": "1",
                                         "include_history": "no"}).json["links"][0]["href"]
    assert "detailed=true" in href and "with_count=true" in href, href
    assert "include_history=false" in href, href

    # An integer-looking value is an integer (Zaqar's int() on the value).
    odd = api.get("/v2/queues", params={"tier": "1", "name": "q0"}).json["queues"]
    assert [q["name"] for q in odd] == ["q01", "q03", "q05", "q07", "q09"]
    assert api.get("/v2/queues", params={"team": "nobody"}).json == {
        "queues": [], "links": []}
    assert_error(api.get("/v2/queues?team=a&team=b"), 400, "one value")
