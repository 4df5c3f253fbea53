"""Pools, flavors and health with pooling on answer as api-ref/openapi.yaml documents.

Every call goes through CheckedClient, which fails the test when a response
(status, headers, body) is not one the document allows for that operation,
or when the document's verdict on a request differs from the test's
(``request_valid=False``: the request is meant to be bad and the document
must refuse it too). The tests also assert the behaviour itself.

Pool reachability is an injected probe: only ``REFUSED`` is unreachable, so
a pool can be registered at a URI that cannot actually be opened (health
must then show it down).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import falcon
import falcon.testing
import pytest

from tests.api.helpers import assert_error
from tests.openapi_contract import CheckedClient
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config
from zq.pooling.setup import open_pools

ADMIN = {"X-Roles": "admin"}
REFUSED = "postgresql://nobody:secret@127.0.0.1:1/refused"
# Accepted by the probe, but nothing listens there: the pool cannot be opened.
DOWN = "postgresql://nobody@127.0.0.1:1/down"


def probe(uri: str) -> str | None:
    return "connection refused" if uri == REFUSED else None


@pytest.fixture
def app(pooling_config: Config, clock: ManualClock) -> Iterator[falcon.App]:
    pools, admin = open_pools(pooling_config, clock=clock, probe=probe)
    try:
        yield create_app(pooling_config, clock=clock, pools=pools, admin=admin)
    finally:
        pools.close()


@pytest.fixture
def user(app: falcon.App, project: str) -> CheckedClient:
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    return CheckedClient(falcon.testing.TestClient(app), headers=headers)


@pytest.fixture
def admin(user: CheckedClient) -> CheckedClient:
    return CheckedClient(user.client, headers={**user.headers, **ADMIN})


@pytest.fixture
def registered(admin: CheckedClient, pool_uris: dict[str, str]) -> CheckedClient:
    """Pools ``one`` and ``two`` (weight 10, flavor-less); the admin client."""
    for name in ("one", "two"):
        put_pool(admin, name, pool_uris[name])
    return admin


def put_pool(admin: CheckedClient, name: str, uri: str, **fields: Any) -> None:
    result = admin.put(f"/v2/pools/{name}", json={"uri": uri, "weight": 10, **fields})
    assert result.status_code == 201, result.text


def names(items: list[dict[str, Any]]) -> list[str]:
    return [item["name"] for item in items]


# -- pools -------------------------------------------------------------------


def test_put_pool_registers_it(admin: CheckedClient, pool_uris: dict[str, str]) -> None:
    result = admin.put("/v2/pools/one", json={"uri": pool_uris["one"], "weight": 7,
                                              "options": {"k": "v"}})
    assert result.status_code == 201
    assert result.headers["location"] == "/v2/pools/one"
    assert result.content == b""
    shown = admin.get("/v2/pools/one", params={"detailed": True}).json
    assert shown == {"name": "one", "href": "/v2/pools/one", "uri": pool_uris["one"],
                     "weight": 7, "flavor": None, "options": {"k": "v"}}


def test_put_pool_with_unreachable_uri_is_400(admin: CheckedClient) -> None:
    result = admin.put("/v2/pools/p", json={"uri": REFUSED, "weight": 1})
    assert_error(result, 400, "unreachable: connection refused")
    assert "secret" not in result.json["description"]
    assert_error(admin.get("/v2/pools/p"), 404, "'p'")


def test_put_pool_overwrites_but_a_taken_uri_is_409(
    registered: CheckedClient, pool_uris: dict[str, str]
) -> None:
    same_name = registered.put("/v2/pools/one", json={"uri": pool_uris["three"], "weight": 1})
    assert same_name.status_code == 201
    assert registered.get("/v2/pools/one").json["uri"] == pool_uris["three"]
    registered.put("/v2/pools/one", json={"uri": pool_uris["one"], "weight": 1})
    same_uri = registered.put("/v2/pools/other", json={"uri": pool_uris["one"], "weight": 1})
    assert_error(same_uri, 409, "already registered as pool 'one'")
    assert_error(registered.get("/v2/pools/other"), 404)


def test_put_pool_bodies_the_document_refuses(
    admin: CheckedClient, pool_uris: dict[str, str]
) -> None:
    uri = pool_uris["one"]
    for body, fragment in [
        ({"uri": uri}, "weight"),
        ({"weight": 1}, "uri"),
        ({"uri": uri, "weight": -1}, "weight"),
        ({"uri": uri, "weight": 2**31}, "weight"),
        ({"uri": uri, "weight": True}, "weight"),
        ({"uri": "", "weight": 1}, "uri"),
        ({"uri": "nope", "weight": 1}, "uri"),
        ({"uri": "sqlite:///" + "x" * 510, "weight": 1}, "uri"),
        ({"uri": uri, "weight": 1, "colour": "red"}, "colour"),
        ({"uri": uri, "weight": 1, "options": []}, "options"),
        ({"uri": uri, "weight": 1, "flavor": "b@d"}, "flavor"),
        (["not", "an", "object"], "object"),
    ]:
        result = admin.put("/v2/pools/p", json=body, request_valid=False)
        assert_error(result, 400, fragment)
    for bad_name in ("b@d", "n" * 65):
        result = admin.put(f"/v2/pools/{bad_name}", json={"uri": uri, "weight": 1},
                           request_valid=False)
        assert_error(result, 400, "Pool name")
    assert_error(admin.put("/v2/pools/p", request_valid=False), 400, "object")
    assert_error(admin.get("/v2/pools/p"), 404)


def test_put_pool_with_null_options_and_flavor(
    admin: CheckedClient, pool_uris: dict[str, str]
) -> None:
    result = admin.put("/v2/pools/p", json={"uri": pool_uris["one"], "weight": 0,
                                            "flavor": None, "options": None})
    assert result.status_code == 201
    shown = admin.get("/v2/pools/p", params={"detailed": True}).json
    assert shown["flavor"] is None and shown["options"] == {} and shown["weight"] == 0


def test_put_pool_may_name_a_flavor_created_later(
    admin: CheckedClient, user: CheckedClient, pool_uris: dict[str, str]
) -> None:
    # As Zaqar (its pools store the flavor name, unchecked): admin scripts
    # register pools before their flavor.
    result = admin.put("/v2/pools/p", json={"uri": pool_uris["one"], "weight": 1,
                                            "flavor": "later"})
    assert result.status_code == 201
    assert admin.get("/v2/pools/p").json["flavor"] == "later"
    assert_error(admin.get("/v2/flavors/later"), 404)
    # Until the flavor exists no queue can ask for it, and flavor-less queues
    # do not land on the pool.
    assert_error(user.put("/v2/queues/q", json={"_flavor": "later"}), 400, "'later'")
    assert_error(user.put("/v2/queues/plain"), 503)  # p is no flavor-less pool
    assert admin.put("/v2/flavors/later", json={"pool_list": ["p"]}).status_code == 201
    assert admin.get("/v2/flavors/later").json["pool_list"] == ["p"]
    assert user.put("/v2/queues/q", json={"_flavor": "later"}).status_code == 201


def test_get_pool(registered: CheckedClient, pool_uris: dict[str, str]) -> None:
    plain = registered.get("/v2/pools/one")
    assert plain.status_code == 200
    assert plain.json == {"name": "one", "href": "/v2/pools/one", "uri": pool_uris["one"],
                          "weight": 10, "flavor": None}
    detailed = registered.get("/v2/pools/one", params={"detailed": True}).json
    assert detailed["options"] == {}
    assert_error(registered.get("/v2/pools/ghost"), 404, "'ghost'")


def test_list_pools_pages_with_marker_limit_and_links(
    admin: CheckedClient, pool_uris: dict[str, str]
) -> None:
    for name in ("one", "two", "three"):
        put_pool(admin, name, pool_uris[name], options={"n": name})
    first = admin.get("/v2/pools", params={"limit": 2})
    assert first.status_code == 200
    assert names(first.json["pools"]) == ["one", "three"]
    assert all("options" not in p for p in first.json["pools"])
    assert first.json["links"] == [{"rel": "next", "href": "/v2/pools?marker=three&limit=2"}]
    second = admin.get(first.json["links"][0]["href"]).json
    assert names(second["pools"]) == ["two"]
    last = admin.get(second["links"][0]["href"]).json
    assert last == {"pools": [], "links": []}

    detailed = admin.get("/v2/pools", params={"detailed": True, "limit": 1}).json
    assert detailed["pools"][0]["options"] == {"n": "one"}
    href = detailed["links"][0]["href"]
    assert href.startswith("/v2/pools?")
    assert parse_qs(href.split("?", 1)[1]) == {
        "marker": ["one"], "limit": ["1"], "detailed": ["true"]}
    after = admin.get(detailed["links"][0]["href"]).json
    assert names(after["pools"]) == ["three"] and after["pools"][0]["options"] == {"n": "three"}

    everything = admin.get("/v2/pools").json
    assert names(everything["pools"]) == ["one", "three", "two"]
    assert everything["links"] == [{"rel": "next", "href": "/v2/pools?marker=two"}]


def test_list_pools_refuses_bad_parameters(registered: CheckedClient) -> None:
    for limit in (0, 21, "many"):
        result = registered.get("/v2/pools", params={"limit": limit}, request_valid=False)
        assert_error(result, 400, "limit")
    result = registered.get("/v2/pools", params={"detailed": "maybe"}, request_valid=False)
    assert_error(result, 400, "detailed")


def test_patch_pool_answers_the_detailed_pool(
    registered: CheckedClient, pool_uris: dict[str, str]
) -> None:
    result = registered.patch("/v2/pools/one", json={"weight": 3, "options": {"a": 1}})
    assert result.status_code == 200
    assert result.json == {"name": "one", "href": "/v2/pools/one", "uri": pool_uris["one"],
                           "weight": 3, "flavor": None, "options": {"a": 1}}
    moved = registered.patch("/v2/pools/one", json={"uri": pool_uris["three"]})
    assert moved.status_code == 200 and moved.json["uri"] == pool_uris["three"]


def test_patch_pool_refusals(registered: CheckedClient, pool_uris: dict[str, str]) -> None:
    taken = registered.patch("/v2/pools/two", json={"uri": pool_uris["one"]})
    assert_error(taken, 409, "already registered as pool 'one'")
    assert_error(registered.patch("/v2/pools/two", json={"uri": REFUSED}), 400, "unreachable")
    pending = registered.patch("/v2/pools/two", json={"flavor": "ghost"})
    assert pending.status_code == 200 and pending.json["flavor"] == "ghost"
    assert registered.patch("/v2/pools/two", json={"flavor": ""}).json["flavor"] is None
    empty = registered.patch("/v2/pools/two", json={}, request_valid=False)
    assert_error(empty, 400, "at least one")
    negative = registered.patch("/v2/pools/two", json={"weight": -1}, request_valid=False)
    assert_error(negative, 400, "weight")
    assert_error(registered.patch("/v2/pools/ghost", json={"weight": 1}), 404, "'ghost'")
    assert registered.get("/v2/pools/two").json["uri"] == pool_uris["two"]


def test_delete_pool(registered: CheckedClient, user: CheckedClient) -> None:
    admin = registered
    assert admin.put("/v2/flavors/fast", json={"pool_list": ["one"]}).status_code == 201
    assert_error(admin.delete("/v2/pools/one"), 403, "only pool of flavor 'fast'")

    assert user.put("/v2/queues/q").status_code == 201  # two is the only flavor-less pool
    assert_error(admin.delete("/v2/pools/two"), 409, "holds 1 queue(s), for example 'q'")

    assert user.delete("/v2/queues/q").status_code == 204
    removed = admin.delete("/v2/pools/two")
    assert removed.status_code == 204
    assert removed.content == b""
    assert_error(admin.get("/v2/pools/two"), 404)
    assert admin.delete("/v2/pools/two").status_code == 204  # absent: still 204
    assert admin.delete("/v2/pools/never-was").status_code == 204


# -- flavors -----------------------------------------------------------------


def test_put_flavor_creates_it_over_its_pools(registered: CheckedClient) -> None:
    admin = registered
    result = admin.put("/v2/flavors/fast", json={"pool_list": ["one", "two"],
                                                 "capabilities": {"durable": True}})
    assert result.status_code == 201
    assert result.headers["location"] == "/v2/flavors/fast"
    assert result.content == b""
    assert admin.get("/v2/pools/two").json["flavor"] == "fast"


def test_put_flavor_refusals(registered: CheckedClient) -> None:
    admin = registered
    assert admin.put("/v2/flavors/fast", json={"pool_list": ["one"]}).status_code == 201
    assert_error(admin.put("/v2/flavors/slow", json={"pool_list": ["two", "one"]}), 409,
                 "'one' already belongs to flavor 'fast'")
    assert_error(admin.put("/v2/flavors/slow", json={"pool_list": ["ghost"]}), 400, "'ghost'")
    for body, fragment in [
        ({"pool_list": []}, "pool_list"),
        ({}, "pool_list"),
        ({"pool_list": ["two"], "colour": "red"}, "colour"),
        ({"pool_list": ["b@d"]}, "pool_list"),
        ({"pool_list": "two"}, "pool_list"),
        ({"pool_list": ["two"], "capabilities": []}, "capabilities"),
        ({"pool_list": ["n" * 65]}, "pool_list"),
    ]:
        assert_error(admin.put("/v2/flavors/slow", json=body, request_valid=False),
                     400, fragment)
    assert_error(admin.get("/v2/flavors/slow"), 404)
    assert admin.get("/v2/pools/two").json["flavor"] is None


def test_get_flavor(registered: CheckedClient) -> None:
    admin = registered
    admin.put("/v2/flavors/fast", json={"pool_list": ["two", "one"],
                                        "capabilities": {"durable": True}})
    plain = admin.get("/v2/flavors/fast")
    assert plain.status_code == 200
    assert plain.json == {"name": "fast", "href": "/v2/flavors/fast",
                          "pool_list": ["one", "two"]}
    detailed = admin.get("/v2/flavors/fast", params={"detailed": True}).json
    assert detailed["capabilities"] == {"durable": True}
    assert_error(admin.get("/v2/flavors/ghost"), 404, "'ghost'")


def test_flavor_whose_pools_all_left_shows_an_empty_pool_list(
    registered: CheckedClient,
) -> None:
    admin = registered
    admin.put("/v2/flavors/fast", json={"pool_list": ["one"]})
    assert admin.patch("/v2/pools/one", json={"flavor": None}).json["flavor"] is None
    assert admin.get("/v2/flavors/fast").json["pool_list"] == []
    assert admin.get("/v2/flavors").json["flavors"][0]["pool_list"] == []


def test_list_flavors_pages_with_marker_limit_and_links(
    admin: CheckedClient, pool_uris: dict[str, str]
) -> None:
    for name in ("one", "two", "three"):
        put_pool(admin, name, pool_uris[name])
        admin.put(f"/v2/flavors/f-{name}", json={"pool_list": [name],
                                                 "capabilities": {"of": name}})
    first = admin.get("/v2/flavors", params={"limit": 2})
    assert first.status_code == 200
    assert first.json["flavors"] == [
        {"name": "f-one", "href": "/v2/flavors/f-one", "pool_list": ["one"]},
        {"name": "f-three", "href": "/v2/flavors/f-three", "pool_list": ["three"]},
    ]
    assert first.json["links"] == [
        {"rel": "next", "href": "/v2/flavors?marker=f-three&limit=2"}
    ]
    second = admin.get(first.json["links"][0]["href"]).json
    assert names(second["flavors"]) == ["f-two"]
    assert admin.get(second["links"][0]["href"]).json == {"flavors": [], "links": []}

    detailed = admin.get("/v2/flavors", params={"detailed": True, "marker": "f-one"}).json
    assert names(detailed["flavors"]) == ["f-three", "f-two"]
    assert [f["capabilities"] for f in detailed["flavors"]] == [{"of": "three"}, {"of": "two"}]
    assert detailed["links"] == [{"rel": "next", "href": "/v2/flavors?marker=f-two&detailed=true"}]
    assert_error(admin.get("/v2/flavors", params={"limit": 0}, request_valid=False), 400)


def test_patch_flavor(registered: CheckedClient, user: CheckedClient) -> None:
    admin = registered
    admin.put("/v2/flavors/fast", json={"pool_list": ["one"]})
    assert user.put("/v2/queues/q", json={"_flavor": "fast"}).status_code == 201
    result = admin.patch("/v2/flavors/fast", json={"pool_list": ["two"]})
    assert result.status_code == 200
    assert result.json == {"name": "fast", "href": "/v2/flavors/fast",
                           "pool_list": ["two"], "capabilities": {}}
    assert admin.get("/v2/pools/one").json["flavor"] is None
    # The queue stays on pool one: it now blocks that pool's removal.
    assert_error(admin.delete("/v2/pools/one"), 409, "'q'")
    capabilities = admin.patch("/v2/flavors/fast", json={"capabilities": {"tier": 1}})
    assert capabilities.json["capabilities"] == {"tier": 1}
    assert capabilities.json["pool_list"] == ["two"]
    cleared = admin.patch("/v2/flavors/fast", json={"capabilities": None})
    assert cleared.status_code == 200 and cleared.json["capabilities"] == {}


def test_patch_flavor_refusals(registered: CheckedClient) -> None:
    admin = registered
    admin.put("/v2/flavors/fast", json={"pool_list": ["one"]})
    admin.put("/v2/flavors/slow", json={"pool_list": ["two"]})
    assert_error(admin.patch("/v2/flavors/slow", json={"pool_list": ["one"]}), 409,
                 "'one' already belongs to flavor 'fast'")
    assert_error(admin.patch("/v2/flavors/slow", json={"pool_list": ["ghost"]}), 400,
                 "'ghost'")
    assert_error(admin.patch("/v2/flavors/slow", json={}, request_valid=False), 400,
                 "at least one")
    assert_error(admin.patch("/v2/flavors/slow", json={"pool_list": []},
                             request_valid=False), 400, "pool_list")
    assert_error(admin.patch("/v2/flavors/ghost", json={"capabilities": {}}), 404, "'ghost'")
    assert admin.get("/v2/flavors/slow").json["pool_list"] == ["two"]


def test_delete_flavor(registered: CheckedClient) -> None:
    admin = registered
    admin.put("/v2/flavors/fast", json={"pool_list": ["one", "two"]})
    result = admin.delete("/v2/flavors/fast")
    assert result.status_code == 204 and result.content == b""
    assert_error(admin.get("/v2/flavors/fast"), 404)
    assert admin.get("/v2/pools/one").json["flavor"] is None
    assert admin.delete("/v2/flavors/fast").status_code == 204  # absent: still 204
    assert admin.delete("/v2/pools/one").status_code == 204  # no flavor holds it now


# -- health and placement ----------------------------------------------------


def test_health_reports_each_pool_one_of_them_down(
    admin: CheckedClient, pool_uris: dict[str, str]
) -> None:
    put_pool(admin, "one", pool_uris["one"])
    put_pool(admin, "down", DOWN)
    result = admin.get("/v2/health")
    assert result.status_code == 200
    assert set(result.json) == {"one", "down"}
    assert result.json["down"] == {"storage_reachable": False, "operation_status": {}}
    up = result.json["one"]
    assert up["storage_reachable"] is True
    assert set(up["operation_status"]) == {"list_queues", "queue_stats", "list_messages"}
    assert all(op["succeeded"] for op in up["operation_status"].values())


def test_health_of_zero_pools_is_an_empty_object(admin: CheckedClient) -> None:
    result = admin.get("/v2/health")
    assert result.status_code == 200 and result.json == {}


def test_queue_creation_is_503_when_no_pool_can_take_it(
    admin: CheckedClient, user: CheckedClient, pool_uris: dict[str, str]
) -> None:
    assert_error(user.put("/v2/queues/q"), 503, "No pool")
    put_pool(admin, "one", pool_uris["one"], weight=0)
    assert_error(user.put("/v2/queues/q"), 503, "without a flavor")
    assert_error(user.post("/v2/queues/q/messages", json={"messages": [{"body": 1}]}),
                 503, "without a flavor")
    admin.put("/v2/flavors/fast", json={"pool_list": ["one"]})
    assert_error(user.put("/v2/queues/q", json={"_flavor": "fast"}), 503, "flavor 'fast'")
    admin.patch("/v2/pools/one", json={"weight": 1})
    assert user.put("/v2/queues/q", json={"_flavor": "fast"}).status_code == 201


# -- access ------------------------------------------------------------------

ADMIN_CALLS = [
    ("GET", "/v2/pools", None),
    ("PUT", "/v2/pools/one", {"uri": "sqlite:///x", "weight": 1}),
    ("GET", "/v2/pools/one", None),
    ("PATCH", "/v2/pools/one", {"weight": 1}),
    ("DELETE", "/v2/pools/one", None),
    ("GET", "/v2/flavors", None),
    ("PUT", "/v2/flavors/fast", {"pool_list": ["one"]}),
    ("GET", "/v2/flavors/fast", None),
    ("PATCH", "/v2/flavors/fast", {"pool_list": ["one"]}),
    ("DELETE", "/v2/flavors/fast", None),
    ("GET", "/v2/health", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS)
def test_non_admin_is_403(
    registered: CheckedClient, user: CheckedClient, method: str, path: str, body: Any
) -> None:
    registered.put("/v2/flavors/fast", json={"pool_list": ["two"]})
    member = {"X-Roles": "member,reader"}
    for headers in ({}, member):
        assert_error(user.request(method, path, json=body, headers=headers), 403, "admin")
    assert registered.get("/v2/pools/one").json["weight"] == 10
    assert registered.get("/v2/flavors/fast").json["pool_list"] == ["two"]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS[:-1])
def test_without_pooling_admin_calls_are_404(
    clock: ManualClock, tmp_path: Any, project: str, method: str, path: str, body: Any
) -> None:
    config = Config().with_overrides(storage={"uri": f"sqlite:///{tmp_path}/s.sqlite3"})
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project, **ADMIN}
    client = CheckedClient(falcon.testing.TestClient(create_app(config, clock=clock)),
                           headers=headers)
    assert_error(client.request(method, path, json=body), 404, "--pooling")
