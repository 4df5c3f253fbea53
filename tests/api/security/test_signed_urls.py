"""Pre-signed URLs: POST /v2/queues/{q}/share and requests carrying a signature."""

from __future__ import annotations

import pathlib
import uuid

import falcon.testing
import pytest

from tests.api.helpers import Api, assert_error
from zq.api import create_app
from zq.config import Config


def signed_client(app, share: dict, **override: str) -> Api:
    """A client sending only the signature headers (no token), like zaqarclient's."""
    client = Api(app, override.pop("project", share["project"]))
    headers = {
        "URL-Signature": share["signature"], "URL-Expires": share["expires"],
        "URL-Methods": ",".join(share["methods"]), "URL-Paths": ",".join(share["paths"]),
        **override,
    }
    base = client.headers
    client.headers = lambda extra: {**base(extra), **headers}
    return client


@pytest.fixture
def share(tenants, clock):
    tenants.a.post_messages("q", {"body": "one"}, {"body": "two"})
    result = tenants.a.post("/v2/queues/q/share", json={
        "paths": ["messages", "claims"], "methods": ["GET", "POST", "DELETE"],
    })
    assert result.status_code == 200, result.text
    return result.json


def test_share_answers_the_signed_document(tenants, share, clock):
    assert set(share) == {"project", "paths", "methods", "expires", "signature"}
    assert share["project"] == tenants.a.project
    assert share["paths"] == ["/v2/queues/q/claims", "/v2/queues/q/messages"]
    assert share["methods"] == ["DELETE", "GET", "POST"]
    assert len(share["signature"]) == 64
    assert share["expires"] == "2023-11-15T22:13:20"  # a day after the ManualClock's start


def test_share_defaults_and_explicit_expiry(tenants):
    result = tenants.a.post("/v2/queues/q/share", json={"expires": "2023-11-15T00:13:20+01:00"})
    assert result.status_code == 200, result.text
    assert result.json["paths"] == ["/v2/queues/q/messages"]
    assert result.json["methods"] == ["GET"]
    assert result.json["expires"] == "2023-11-14T23:13:20"


@pytest.mark.parametrize("body, fragment", [
    ({"paths": ["queues"]}, "paths"),
    ({"paths": []}, "paths"),
    ({"methods": ["TRACE"]}, "methods"),
    ({"methods": "GET"}, "methods"),
    ({"expires": "yesterday"}, "ISO 8601"),
    ({"expires": 12}, "ISO 8601"),
    ({"expires": "2023-11-14T00:00:00"}, "future"),
    ({"expires": "2030-01-01T00:00:00"}, "at most"),
    ([1], "JSON object"),
])
def test_bad_share_requests_are_400(tenants, body, fragment):
    assert_error(tenants.a.post("/v2/queues/q/share", json=body), 400, fragment)


def test_share_for_another_project_is_403(tenants):
    result = tenants.a.post("/v2/queues/q/share", json={"project_id": tenants.b.project})
    assert_error(result, 403, "own project")


def test_share_without_a_secret_key_is_503(api):
    assert_error(api.post("/v2/queues/q/share", json={}), 503, "secret_key")


def test_signed_requests_are_allowed_exactly_what_was_signed(tenants, share):
    signed = signed_client(tenants.app, share)
    listed = signed.get("/v2/queues/q/messages")
    assert listed.status_code == 200
    assert [m["body"] for m in listed.json["messages"]] == ["one", "two"]
    one = listed.json["messages"][0]["id"]
    assert signed.get(f"/v2/queues/q/messages/{one}").status_code == 200  # below a path
    claim = signed.claim("q", limit=1)
    assert claim.status_code == 201
    assert signed.get(claim.headers["Location"]).status_code == 200
    assert signed.delete(f"/v2/queues/q/messages/{one}").status_code == 403  # claimed
    assert tenants.a.get("/v2/queues/q/stats").json["messages"]["claimed"] == 1
    # Not signed: other methods, other paths of the queue, other queues, admin.
    assert_error(signed.patch(claim.headers["Location"], json={"ttl": 100}), 403, "PATCH")
    assert_error(signed.get("/v2/queues/q/stats"), 403, "does not allow")
    assert_error(signed.get("/v2/queues/q"), 403)
    assert_error(signed.get("/v2/queues/other/messages"), 403)
    assert_error(signed.get("/v2/queues/q/messagesX"), 403)
    assert_error(signed.post("/v2/queues/q/share", json={}), 403)
    assert_error(signed.post("/v2/queues/q/breaker", json={"state": "open"}), 403)
    assert_error(signed.get("/v2/health", headers={"X-Roles": "admin"}), 403)


def test_signature_ignores_tokens_and_roles(tenants, share):
    # A signed request is scoped by its signature, even with B's token added.
    signed = signed_client(tenants.app, share, **{"X-Auth-Token": tenants.b.token})
    assert len(signed.get("/v2/queues/q/messages").json["messages"]) == 2


@pytest.mark.parametrize("field, value", [
    ("URL-Signature", "0" * 64),
    ("URL-Methods", "GET,POST,DELETE,PATCH"),
    ("URL-Paths", "/v2/queues/q/messages,/v2/queues/q/claims,/v2/queues/other/messages"),
    ("URL-Expires", "2030-01-01T00:00:00"),
])
def test_tampered_signatures_are_403(tenants, share, field, value):
    signed = signed_client(tenants.app, share, **{field: value})
    assert_error(signed.get("/v2/queues/q/messages"), 403, "does not match")


def test_signature_is_bound_to_its_project(tenants, share):
    signed = signed_client(tenants.app, share, project=tenants.b.project)
    assert_error(signed.get("/v2/queues/q/messages"), 403, "does not match")


def test_missing_signature_headers_are_403(tenants, share):
    signed = signed_client(tenants.app, share, **{"URL-Methods": ""})
    assert_error(signed.get("/v2/queues/q/messages"), 403, "URL-Methods")


def test_expired_signatures_are_403(tenants, share, clock):
    signed = signed_client(tenants.app, share)
    clock.advance(86400 - 1)
    assert signed.get("/v2/queues/q/messages").status_code == 200
    clock.advance(1)
    assert_error(signed.get("/v2/queues/q/messages"), 403, "expired")


def test_signatures_from_another_key_are_403(tenants, share, storage, clock, token_config):
    other = create_app(
        token_config.with_overrides(signed_urls={"secret_key": "another key"}),
        storage=storage, clock=clock,
    )
    assert_error(signed_client(other, share).get("/v2/queues/q/messages"), 403)


def test_signed_requests_without_a_configured_key_are_403(share, storage, clock):
    app = create_app(Config(), storage=storage, clock=clock)
    assert_error(signed_client(app, share).get("/v2/queues/q/messages"), 403, "not enabled")


def test_signed_requests_bypass_keystone(fake_keystonemiddleware, share, storage, clock):
    config = Config().with_overrides(
        auth={"strategy": "keystone"},
        signed_urls={"secret_key": "test-signing-key-0123456789abcdef"},
    )
    app = create_app(config, storage=storage, clock=clock)
    signed = signed_client(app, share, **{"X-Identity-Status": "Confirmed", "X-Roles": "admin"})
    assert len(signed.get("/v2/queues/q/messages").json["messages"]) == 2
    assert_error(signed.get("/v2/health"), 403)
    client = falcon.testing.TestClient(app)
    no_token = client.simulate_get("/v2/queues/q/messages", headers={
        "Client-ID": str(uuid.uuid4()), "X-Project-ID": share["project"]})
    assert no_token.status_code == 401


def test_a_signed_url_lets_a_subscriber_confirm_and_nothing_else(tenants):
    created = tenants.a.post("/v2/queues/q/subscriptions",
                             json={"subscriber": "https://example.com/hook"})
    sid = created.json["subscription_id"]
    result = tenants.a.post("/v2/queues/q/share", json={
        "paths": ["subscriptions"], "methods": ["PUT"]})
    assert result.status_code == 200, result.text
    signed = signed_client(tenants.app, result.json)
    confirm = f"/v2/queues/q/subscriptions/{sid}/confirm"
    assert signed.put(confirm, json={"confirmed": True}).status_code == 204
    assert tenants.a.get(f"/v2/queues/q/subscriptions/{sid}").json["confirmed"] is True
    assert_error(signed.get(f"/v2/queues/q/subscriptions/{sid}"), 403)
    assert_error(signed.put(f"/v2/queues/other/subscriptions/{sid}/confirm",
                            json={"confirmed": False}), 403)


def test_refusals_are_403_naming_the_reason_where_zaqar_answers_404(tenants, share):
    # Zaqar's verify_pre_signed_url answers a bare 404 to each of these; zq keeps
    # 403 with the reason (docs/compatibility.md, "Requests").
    signed = signed_client(tenants.app, share)
    one = signed.get("/v2/queues/q/messages").json["messages"][0]["id"]
    other_queue_message = f"/v2/queues/other/messages/{one}"
    for result, reason in (
        (signed_client(tenants.app, share, **{"URL-Signature": "0" * 64})
         .get("/v2/queues/q/messages"), "does not match"),
        (signed.patch(f"/v2/queues/q/messages/{one}", json={}), "does not allow PATCH"),
        (signed.get("/v2/queues/q/stats"), "does not allow GET on /v2/queues/q/stats"),
        (signed.get(other_queue_message), f"does not allow GET on {other_queue_message}"),
    ):
        assert_error(result, 403, reason)
        assert result.json["title"] == "Forbidden"
    doc = pathlib.Path(__file__).parents[3] / "docs" / "compatibility.md"
    assert "`verify_pre_signed_url`) | 403" in doc.read_text(encoding="utf-8")
