"""Headers, content negotiation, body limits and error shapes on every route."""

from __future__ import annotations

import uuid

import falcon.testing

from tests.api.helpers import assert_error
from zq.api.middleware import REQUEST_ID_HEADER


def test_client_id_is_required_and_must_be_a_uuid(app, project):
    client = falcon.testing.TestClient(app)
    result = client.simulate_get("/v2/queues", headers={"X-Project-ID": project})
    assert_error(result, 400, "Client-ID")
    result = client.simulate_get(
        "/v2/queues", headers={"X-Project-ID": project, "Client-ID": "abc"}
    )
    assert_error(result, 400, "UUID")


def test_project_id_is_required_and_bounded(app):
    client = falcon.testing.TestClient(app)
    headers = {"Client-ID": str(uuid.uuid4())}
    assert_error(client.simulate_get("/v2/queues", headers=headers), 400, "X-Project-ID")
    headers["X-Project-ID"] = "p" * 257
    assert_error(client.simulate_get("/v2/queues", headers=headers), 400, "256")


def test_accept_must_allow_json(api):
    assert_error(api.get("/v2/queues", headers={"Accept": "application/xml"}), 406)
    assert api.get("/v2/queues", headers={"Accept": "*/*"}).status_code == 200


def test_form_encoded_bodies_are_refused(api):
    result = api.post("/v2/queues/q/messages", body="messages=1",
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert_error(result, 400, "Form-encoded")


def test_oversized_body_is_refused_before_reading(app, api, config):
    body = b"x" * (config.limits.max_request_body + 1)
    assert_error(api.post("/v2/queues/q/claims", body=body), 400, "at most")


def test_every_response_has_a_request_id(api):
    ok = api.get("/v2/queues")
    bad = api.get("/v2/queues/bad!")
    assert ok.headers[REQUEST_ID_HEADER].startswith("req-")
    assert bad.headers[REQUEST_ID_HEADER].startswith("req-")
    assert ok.headers[REQUEST_ID_HEADER] != bad.headers[REQUEST_ID_HEADER]


def test_unknown_routes_and_methods_are_json_errors(api):
    assert_error(api.get("/v2/nothing-here"), 404)
    result = api.request("POST", "/v2/queues/q/stats")
    assert_error(result, 405)
    assert "GET" in result.headers["Allow"]


def test_unexpected_failures_are_logged_500s(api, app, storage, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(storage.queues, "stats", broken)
    result = api.get("/v2/queues/q/stats")
    assert_error(result, 500)
    assert "secret" not in result.text
    assert "secret internal detail" in caplog.text


def test_trailing_slash_is_accepted(api):
    assert api.get("/v2/queues/").status_code == 200


def test_home_document(api):
    result = api.get("/v2")
    assert result.status_code == 200
    resources = result.json["resources"]
    assert resources["rel/queue"]["href-template"] == "/v2/queues/{queue_name}"
    assert resources["rel/ping"]["href-template"] == "/v2/ping"  # as Zaqar writes it
