"""Posts of every size the limits allow: stored whole on every backend, small headers.

A post of more than ~3,120 messages was a 503 on PostgreSQL (one statement,
more than 65,535 parameters), and the Location header listed every id
(105 KB for 3,200 messages: past 64 KiB Python's http.client raises after
the post committed, so a retrying client posts twice).
"""

from __future__ import annotations

import pytest

from tests.api.helpers import Api
from tests.drivers.mongo.session import real_server_url
from zq.config import Limits

LIMITS = Limits()
# The most messages one post holds within the default limits: one-digit
# bodies, {"body":0}, filling max_messages_post_size.
LARGEST_POST = (LIMITS.max_messages_post_size - len('{"messages":[]}')) // len('{"body":0},')
# Many proxies refuse response headers past 8 KB.
HEADER_BUDGET = 1024


def post_body(count: int) -> str:
    return '{"messages":[' + ",".join(['{"body":0}'] * count) + "]}"


def largest_post(backend_name: str) -> int:
    if backend_name == "mongo" and real_server_url() is None:
        return 300  # mongomock's inserts are quadratic (see tests/contract)
    return LARGEST_POST


def test_the_largest_post_is_stored_whole_and_named_by_a_small_location(
    api: Api, backend_name: str
):
    count = largest_post(backend_name)
    body = post_body(count)
    assert len(body) <= LIMITS.max_messages_post_size
    result = api.post("/v2/queues/q/messages", body=body)
    assert result.status_code == 201, result.text[:500]
    assert len(result.json["resources"]) == count
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == count
    location = result.headers["Location"]
    assert location == "/v2/queues/q/messages"
    assert sum(len(k) + len(v) for k, v in result.headers.items()) < HEADER_BUDGET


@pytest.mark.parametrize("count", [1, LIMITS.max_ids_per_request])
def test_a_post_that_one_get_can_fetch_is_located_by_its_ids(api: Api, count: int):
    result = api.post("/v2/queues/q/messages", body=post_body(count))
    ids = [href.rsplit("/", 1)[1] for href in result.json["resources"]]
    assert result.headers["Location"] == f"/v2/queues/q/messages?ids={','.join(ids)}"
    fetched = api.get(result.headers["Location"], params={"echo": "true"})
    assert sorted(m["id"] for m in fetched.json["messages"]) == sorted(ids)


def test_past_that_the_location_is_the_queues_messages(api: Api):
    result = api.post("/v2/queues/q/messages",
                      body=post_body(LIMITS.max_ids_per_request + 1))
    assert result.headers["Location"] == "/v2/queues/q/messages"
    assert len(result.json["resources"]) == LIMITS.max_ids_per_request + 1
