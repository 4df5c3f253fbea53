"""JSON nested deeper than [limits] max_json_depth is refused with 400 when parsed.

orjson reads 1024 levels but writes only 254: a body between the two used
to be stored (or half handled) and then fail with a 500 when written back.
zq.api.bodies.read_json refuses it, for every body the API reads.
"""

from __future__ import annotations

import orjson
import pytest

from tests.api.helpers import PATCH_TYPE, Api, assert_error
from zq.config import MAX_JSON_DEPTH, Config, ConfigError, Limits

DEPTH = Limits().max_json_depth


def nested(levels: int) -> object:
    """``levels`` arrays one inside the other: [[[...0...]]]."""
    document: object = 0
    for _ in range(levels):
        document = [document]
    return document


def raw_nested(levels: int) -> str:
    """The JSON text of ``nested(levels)``, written by hand: no encoder goes past 254."""
    return "[" * levels + "0" + "]" * levels


# The 255-1024 range was a 500; just past the limit must be refused too.
TOO_DEEP = [DEPTH + 1, 255, 1024]


@pytest.mark.parametrize("levels", TOO_DEEP)
def test_a_message_body_nested_too_deeply_is_refused(api: Api, levels: int):
    body = raw_nested(levels - 3)  # {"messages": [{"body": ...}]} adds 3 levels
    result = api.post("/v2/queues/q/messages", body=f'{{"messages": [{{"body": {body}}}]}}')
    assert_error(result, 400, "nested too deeply")
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 0


def test_a_message_body_at_the_limit_round_trips(api: Api):
    body = nested(DEPTH - 3)
    [message_id] = api.post_messages("q", {"body": body})
    assert api.get(f"/v2/queues/q/messages/{message_id}").json["body"] == body


@pytest.mark.parametrize("levels", TOO_DEEP)
def test_queue_metadata_nested_too_deeply_is_refused(api: Api, levels: int):
    assert_error(api.put("/v2/queues/q", body=f'{{"deep": {raw_nested(levels - 1)}}}'), 400,
                 "nested too deeply")
    assert api.get("/v2/queues").json["queues"] == []
    assert api.put("/v2/queues/q", json={"deep": 1}).status_code == 201
    patch = f'[{{"op": "add", "path": "/metadata/deep", "value": {raw_nested(levels - 2)}}}]'
    result = api.patch("/v2/queues/q", body=patch, headers={"Content-Type": PATCH_TYPE})
    assert_error(result, 400, "nested too deeply")
    assert api.get("/v2/queues/q").json["deep"] == 1


def test_metadata_at_the_limit_is_listed_in_detail(api: Api):
    deep = nested(DEPTH - 1)
    assert api.put("/v2/queues/q", json={"deep": deep}).status_code == 201
    listed = api.get("/v2/queues", params={"detailed": "true"})
    assert listed.status_code == 200, listed.text
    assert listed.json["queues"][0]["metadata"]["deep"] == deep


@pytest.mark.parametrize("path", ["/v2/queues/q/claims", "/v2/queues/q/purge"])
def test_other_bodies_nested_too_deeply_are_refused(api: Api, path: str):
    result = api.post(path, body=f'{{"ttl": {raw_nested(DEPTH)}}}')
    assert_error(result, 400, "nested too deeply")


def test_objects_count_as_levels_too(api: Api):
    body: object = 0
    for _ in range(DEPTH):
        body = {"k": body}
    result = api.post("/v2/queues/q/messages", body=orjson.dumps({"messages": [{"body": body}]}))
    assert_error(result, 400, "nested too deeply")


def test_the_depth_is_configurable(storage, clock, project):
    from zq.api import create_app

    config = Config().with_overrides(limits={"max_json_depth": 5})
    api = Api(create_app(config, storage=storage, clock=clock), project)
    assert api.post("/v2/queues/q/messages",
                    json={"messages": [{"body": nested(2)}]}).status_code == 201
    assert_error(api.post("/v2/queues/q/messages",
                          json={"messages": [{"body": nested(3)}]}), 400, "at most 5")


@pytest.mark.parametrize("depth", [0, MAX_JSON_DEPTH + 1, 1000])
def test_a_depth_orjson_could_not_write_back_is_refused_at_start_up(depth: int):
    with pytest.raises(ConfigError, match="max_json_depth"):
        Config().with_overrides(limits={"max_json_depth": depth})
