"""Ids, names and markers no client was ever given: NUL bytes, control characters, huge.

Every backend gets the same answer, decided above the storage contract
(zq.validation.is_id_shaped, zq.service): an id that zq could never have
issued names nothing, so it is answered as an unknown id is (404 to read
it, 204 to delete it, as Zaqar does); it never reaches a backend, where a
NUL byte was a 500 on PostgreSQL. Queue listing markers and name filters
are names: one with a character no name may hold is a 400.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.api.helpers import Api, assert_error

BAD_IDS = {
    "nul": "\x00",
    "inner-nul": "0123456789abcdef\x000123456789abcdef",
    "newline": "0123456789abcdef0123456789abcdef\n",
    "escape": "\x1b[31m",
    "delete-char": "\x7f",
    "non-ascii": "é" * 24,
    "long": "a" * 5000,
}


@pytest.fixture(params=list(BAD_IDS), ids=list(BAD_IDS))
def bad_id(request: pytest.FixtureRequest) -> str:
    return BAD_IDS[request.param]


def path_id(value: str) -> str:
    return quote(value, safe="")


def test_reading_a_message_by_a_bad_id_is_not_found(api: Api, bad_id: str):
    api.post_messages("q", {"body": 1})
    assert_error(api.get(f"/v2/queues/q/messages/{path_id(bad_id)}"), 404)
    assert_error(api.get("/v2/queues/q/messages", params={"ids": bad_id}), 404)


def test_a_bad_id_among_good_ones_is_skipped(api: Api, bad_id: str):
    [message_id] = api.post_messages("q", {"body": 1})
    result = api.get("/v2/queues/q/messages", params={"ids": f"{message_id},{bad_id}"})
    assert result.status_code == 200, result.text
    assert [m["id"] for m in result.json["messages"]] == [message_id]


def test_deleting_by_a_bad_id_deletes_nothing(api: Api, bad_id: str):
    [message_id] = api.post_messages("q", {"body": 1})
    assert api.delete(f"/v2/queues/q/messages/{path_id(bad_id)}").status_code == 204
    assert api.delete("/v2/queues/q/messages", params={"ids": bad_id}).status_code == 204
    assert api.get(f"/v2/queues/q/messages/{message_id}").status_code == 200


def test_a_bad_claim_id_holds_no_message(api: Api, bad_id: str):
    [message_id] = api.post_messages("q", {"body": 1})
    assert_error(api.delete(f"/v2/queues/q/messages/{message_id}",
                            params={"claim_id": bad_id}), 400)
    result = api.delete("/v2/queues/q/messages",
                        params={"ids": message_id, "claim_ids": bad_id})
    assert result.status_code == 204, result.text
    assert api.get(f"/v2/queues/q/messages/{message_id}").status_code == 200
    # A missing message with a bad claim id: nothing to delete, as for any claim id.
    result = api.delete(f"/v2/queues/q/messages/{'0' * 24}", params={"claim_id": bad_id})
    assert result.status_code == 204, result.text


def test_a_bad_claim_id_names_no_claim(api: Api, bad_id: str):
    api.post_messages("q", {"body": 1})
    assert api.claim("q").status_code == 201
    path = f"/v2/queues/q/claims/{path_id(bad_id)}"
    assert_error(api.get(path), 404)
    assert_error(api.patch(path, json={"ttl": 60}), 404)
    assert api.delete(path).status_code == 204
    # The real claim still holds its message.
    assert api.get("/v2/queues/q/messages").json["messages"] == []


@pytest.mark.parametrize("parameter", ["marker", "name"])
def test_queue_listing_refuses_a_marker_or_filter_no_name_can_hold(
    api: Api, bad_id: str, parameter: str
):
    api.put("/v2/queues/q")
    assert_error(api.get("/v2/queues", params={parameter: bad_id}), 400, parameter)


def test_message_listing_after_a_bad_marker_is_an_empty_page(api: Api, bad_id: str):
    api.post_messages("q", {"body": 1})
    result = api.get("/v2/queues/q/messages", params={"marker": bad_id, "echo": "true"})
    assert result.status_code == 200, result.text
    assert result.json == {"messages": [], "links": []}


@pytest.mark.parametrize("name", ["q\x00", "\x00", "q\n", "q\r", "q\t", "q\x1b"])
def test_queue_names_with_control_characters_are_refused(api: Api, name: str):
    assert_error(api.put(f"/v2/queues/{path_id(name)}"), 400, "Queue name")
    assert_error(api.post(f"/v2/queues/{path_id(name)}/messages",
                          json={"messages": [{"body": 1}]}), 400, "Queue name")
    assert api.get("/v2/queues").json["queues"] == []
