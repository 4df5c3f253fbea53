"""The contract checker accepts conforming exchanges and names what is wrong otherwise."""

from __future__ import annotations

import json
from typing import Any

import falcon
import falcon.testing
import httpx
import pytest

from tests.openapi_contract import CheckedClient, ContractViolation, Exchange, default_contract

HEADERS = {
    "Client-ID": "3381af92-2b9e-11e3-b191-71861300734c",
    "X-Project-ID": "checker-tests",
}
MESSAGE = {
    "id": "m1", "href": "/v2/queues/q/messages/m1", "ttl": 3600, "age": 2,
    "body": {"n": 1}, "claim_count": 0,
}


class Canned:
    """A falcon resource answering whatever the test put in ``answer``."""

    answer: tuple[str, Any, dict[str, str]] = (falcon.HTTP_200, MESSAGE, {})

    def on_get(self, req: falcon.Request, resp: falcon.Response, **_: str) -> None:
        status, media, headers = self.answer
        resp.status = status
        if media is not None:
            resp.media = media
        for name, value in headers.items():
            resp.set_header(name, value)

    on_put = on_patch = on_delete = on_post = on_get


@pytest.fixture
def canned() -> Canned:
    return Canned()


@pytest.fixture
def client(canned: Canned) -> CheckedClient:
    app = falcon.App()
    app.add_route("/v2/queues/{queue_name}", canned)
    app.add_route("/v2/queues/{queue_name}/messages/{message_id}", canned)
    return CheckedClient(falcon.testing.TestClient(app), headers=HEADERS)


def test_conforming_falcon_exchange_passes(client: CheckedClient) -> None:
    result = client.get("/v2/queues/q/messages/m1")
    assert result.json == MESSAGE


def test_undocumented_status_fails_and_lists_documented_ones(
    client: CheckedClient, canned: Canned
) -> None:
    canned.answer = (falcon.HTTP_409, {"title": "t", "description": "d"}, {})
    with pytest.raises(ContractViolation) as info:
        client.get("/v2/queues/q/messages/m1")
    text = str(info.value)
    assert "GET /v2/queues/{queue_name}/messages/{message_id}" in text
    assert "status 409 is not documented" in text
    assert "200, 400, 404, 406, 500, 503" in text


def test_schema_error_names_the_field(client: CheckedClient, canned: Canned) -> None:
    canned.answer = (falcon.HTTP_200, {**MESSAGE, "claim_count": -1}, {})
    with pytest.raises(ContractViolation, match=r"\$\.claim_count: -1 is less than"):
        client.get("/v2/queues/q/messages/m1")


def test_error_without_description_fails(client: CheckedClient, canned: Canned) -> None:
    canned.answer = (falcon.HTTP_404, {"title": "Not found"}, {})
    with pytest.raises(ContractViolation, match="'description' is a required property"):
        client.get("/v2/queues/q/messages/m1")


def test_missing_location_header_fails(client: CheckedClient, canned: Canned) -> None:
    canned.answer = (falcon.HTTP_201, None, {})
    with pytest.raises(ContractViolation, match="Missing required header: Location"):
        client.put("/v2/queues/q")
    canned.answer = (falcon.HTTP_201, None, {"Location": "/v2/queues/q"})
    client.put("/v2/queues/q")


def test_body_on_a_bodiless_response_fails() -> None:
    # falcon's own WSGI lint refuses a 204 with a body, so build the exchange.
    exchange = Exchange("DELETE", "/v2/queues/q", 204, request_headers=HEADERS,
                        response_body=b'{"unexpected": true}')
    with pytest.raises(ContractViolation, match="documented without a body"):
        default_contract().check(exchange)


def test_invalid_request_is_reported(client: CheckedClient, canned: Canned) -> None:
    canned.answer = (falcon.HTTP_201, None, {"Location": "/v2/queues/q"})
    with pytest.raises(ContractViolation, match=r"request: .*_max_claim_count"):
        client.put("/v2/queues/q", json={"_max_claim_count": 0})


def test_request_meant_to_be_bad_must_be_refused_by_the_document(
    client: CheckedClient, canned: Canned
) -> None:
    canned.answer = (falcon.HTTP_400, {"title": "t", "description": "d"}, {})
    client.get("/v2/queues/q/messages/m1", headers={"Client-ID": "nope"}, request_valid=False)
    client.get("/v2/queues/q/messages/m1", headers={"X-Project-ID": None}, request_valid=False)
    with pytest.raises(ContractViolation, match="the document accepts this request"):
        client.get("/v2/queues/q/messages/m1", request_valid=False)


def test_json_patch_media_type_is_understood(client: CheckedClient, canned: Canned) -> None:
    view = {
        "_default_message_ttl": 3600, "_default_message_delay": 0,
        "_max_messages_post_size": 262144, "_max_claim_count": 2,
        "_dead_letter_queue": "dlq", "_dead_letter_queue_messages_ttl": None,
        "_enable_encrypt_messages": False,
    }
    canned.answer = (falcon.HTTP_200, view, {})
    patch = [{"op": "add", "path": "/metadata/_max_claim_count", "value": 2}]
    client.patch(
        "/v2/queues/q",
        body=json.dumps(patch),
        headers={"Content-Type": "application/openstack-messaging-v2.0-json-patch"},
    )
    with pytest.raises(ContractViolation, match="request: "):
        client.patch("/v2/queues/q", json=patch)  # application/json: not the documented type


def test_unknown_path_fails() -> None:
    exchange = Exchange("GET", "/v2/nowhere", 200, request_headers=HEADERS)
    with pytest.raises(ContractViolation, match=r"not in openapi\.yaml"):
        default_contract().check(exchange)


def httpx_response(
    method: str, url: str, status: int, *, json_body: Any = None,
    request_json: Any = None, headers: dict[str, str] | None = None,
) -> httpx.Response:
    request = httpx.Request(method, url, headers=HEADERS, json=request_json)
    return httpx.Response(status, json=json_body, headers=headers, request=request)


def test_httpx_exchange_with_query_passes_and_fails() -> None:
    contract = default_contract()
    ok = httpx_response(
        "DELETE", "http://localhost:8888/v2/queues/q/messages?pop=2", 200,
        json_body={"messages": [MESSAGE]},
    )
    operation = contract.check(Exchange.from_httpx(ok))
    assert operation.template == "/v2/queues/{queue_name}/messages"

    too_many = httpx_response(
        "DELETE", "http://localhost:8888/v2/queues/q/messages?pop=21", 400,
        json_body={"title": "Invalid request", "description": "pop at most 20"},
    )
    with pytest.raises(ContractViolation, match="request: InvalidParameter"):
        contract.check(Exchange.from_httpx(too_many))
    contract.check(Exchange.from_httpx(too_many), request_valid=False)


def test_httpx_claim_exchange_checks_location_and_body() -> None:
    body = {"messages": [{**MESSAGE, "href": "/v2/queues/q/messages/m1?claim_id=c1",
                          "claim_count": 1}]}
    response = httpx_response(
        "POST", "http://localhost:8888/v2/queues/q/claims?limit=5", 201,
        json_body=body, request_json={"ttl": 300, "grace": 60},
        headers={"Location": "/v2/queues/q/claims/c1"},
    )
    default_contract().check(Exchange.from_httpx(response))
    response = httpx_response(
        "POST", "http://localhost:8888/v2/queues/q/claims", 201,
        json_body={"messages": [{**MESSAGE, "history": [{"queue": "q"}]}]},
        headers={"Location": "/v2/queues/q/claims/c1"},
    )
    with pytest.raises(ContractViolation, match=r"\$\.messages\[0\]\.history\[0\]"):
        default_contract().check(Exchange.from_httpx(response))
