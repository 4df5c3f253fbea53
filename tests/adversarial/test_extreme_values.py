"""Values at and past the ends of every range: 400 or an empty page, never a 500.

Markers past the 64-bit integers every backend stores them in, markers no
page ever gave (Zaqar answers those with an empty page; so does zq), page
sizes and counts far out of range, and pre-signed URL expiries that an
offset pushes outside the calendar.
"""

from __future__ import annotations

import pytest

from tests.api.helpers import Api, assert_error
from zq.api import create_app
from zq.config import Config

HUGE = [str(2**63), str(2**64), "9" * 30, "1" * 5000]


@pytest.mark.parametrize("marker", [*HUGE, str(2**63 - 1), "abc", "-1", "1.5", "١٢"])
def test_a_marker_past_every_position_gives_an_empty_page(api: Api, marker: str):
    api.post_messages("q", {"body": 1})
    result = api.get("/v2/queues/q/messages", params={"marker": marker, "echo": "true"})
    assert result.status_code == 200, result.text
    assert result.json == {"messages": [], "links": []}


def test_a_marker_of_a_real_page_still_pages(api: Api):
    ids = api.post_messages("q", *({"body": i} for i in range(3)))
    first = api.get("/v2/queues/q/messages", params={"limit": 2, "echo": "true"})
    assert [m["id"] for m in first.json["messages"]] == ids[:2]
    rest = api.get(first.json["links"][0]["href"])
    assert [m["id"] for m in rest.json["messages"]] == ids[2:]


@pytest.mark.parametrize("value", [*HUGE, "-1", "0"])
@pytest.mark.parametrize("request_line", [
    ("GET", "/v2/queues", "limit"),
    ("GET", "/v2/queues/q/messages", "limit"),
    ("POST", "/v2/queues/q/claims", "limit"),
    ("DELETE", "/v2/queues/q/messages", "pop"),
])
def test_counts_out_of_range_are_400(api: Api, value: str, request_line: tuple[str, str, str]):
    method, path, parameter = request_line
    api.post_messages("q", {"body": 1})
    assert_error(api.request(method, path, params={parameter: value}), 400)
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 1


@pytest.mark.parametrize("field", ["ttl", "delay"])
@pytest.mark.parametrize("value", [2**63, 2**64 - 1, -(2**63), 2**70, -(2**70)])
def test_message_numbers_out_of_range_are_400(api: Api, field: str, value: int):
    result = api.post("/v2/queues/q/messages",
                      body=f'{{"messages": [{{"body": 1, "{field}": {value}}}]}}')
    assert_error(result, 400, field if -(2**63) <= value < 2**64 else "64-bit")


SECRET = "adversarial-signing-key"


@pytest.fixture
def signed_app(storage, clock):
    config = Config().with_overrides(signed_urls={"secret_key": SECRET})
    return create_app(config, storage=storage, clock=clock)


EXTREME_EXPIRIES = [
    "9999-12-31T23:59:59-14:00",  # past year 9999 in UTC
    "0001-01-01T00:00:00+14:00",  # before year 1 in UTC
    "9999-12-31T23:59:59-00:01",
    "0001-01-01T00:00:00+00:01",
]


@pytest.mark.parametrize("expires", EXTREME_EXPIRIES)
def test_a_signature_with_an_expiry_outside_the_calendar_is_403(
    signed_app, project: str, expires: str
):
    client = Api(signed_app, project)
    headers = {
        "URL-Signature": "0" * 64, "URL-Expires": expires, "URL-Methods": "GET",
        "URL-Paths": "/v2/queues/q/messages",
    }
    assert_error(client.get("/v2/queues/q/messages", headers=headers), 403, "expires")


@pytest.mark.parametrize("expires", EXTREME_EXPIRIES)
def test_sharing_with_an_expiry_outside_the_calendar_is_400(
    signed_app, project: str, expires: str
):
    client = Api(signed_app, project)
    result = client.post("/v2/queues/q/share", json={"expires": expires})
    assert_error(result, 400, "expires")


@pytest.mark.parametrize("text", [str(2**64), str(-(2**63) - 1), str(2**70), "9" * 30,
                                  "1" * 5000], ids=["2**64", "-2**63-1", "2**70", "9x30", "1x5000"])
def test_integers_past_64_bits_are_refused_not_rounded(api: Api, text: str):
    # orjson reads them as floats: 2**70 was stored as 1.1805916207174113e+21
    # (and past a double's range refuses them itself).
    why = "not valid JSON" if len(text) > 308 else "64-bit"
    result = api.post("/v2/queues/q/messages", body=f'{{"messages": [{{"body": {text}}}]}}')
    assert_error(result, 400, why)
    assert_error(api.put("/v2/queues/q", body=f'{{"n": {text}}}'), 400, why)
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 0


@pytest.mark.parametrize("number", [2**64 - 1, -(2**63), 10**18])
def test_integers_within_64_bits_round_trip_exactly(api: Api, number: int):
    [message_id] = api.post_messages("q", {"body": {"n": number, "s": "1" * 40}})
    assert api.get(f"/v2/queues/q/messages/{message_id}").json["body"] == {
        "n": number, "s": "1" * 40,
    }
    assert api.put("/v2/queues/q", body=f'{{"n": {number}}}').status_code in (201, 204)
