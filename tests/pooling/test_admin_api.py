"""The admin API: /v2/pools, /v2/flavors and per-pool health over HTTP."""

from __future__ import annotations

import pytest

from tests.api.helpers import Api, assert_error
from zq.api import create_app
from zq.config import Config

ADMIN = {"X-Roles": "admin"}


class AdminApi(Api):
    """Sends X-Roles: admin with every request."""

    def headers(self, extra):
        return super().headers({**ADMIN, **(extra or {})})


@pytest.fixture
def app(pooling_config, clock):
    app = create_app(pooling_config, clock=clock)
    yield app


@pytest.fixture
def admin(app, project) -> AdminApi:
    return AdminApi(app, project)


@pytest.fixture
def user(app, project) -> Api:
    return Api(app, project)


@pytest.fixture
def pools(admin, pool_uris):
    for name in ("one", "two"):
        result = admin.put(f"/v2/pools/{name}", json={"uri": pool_uris[name], "weight": 10})
        assert result.status_code == 201, result.text
        assert result.headers["Location"] == f"/v2/pools/{name}"
    return admin


def test_admin_role_is_required(user):
    for method, path in [("GET", "/v2/pools"), ("PUT", "/v2/pools/p"),
                         ("GET", "/v2/flavors/f"), ("DELETE", "/v2/flavors/f")]:
        assert_error(user.request(method, path, json={}), 403, "admin")


def test_pool_create_get_patch_list_delete(pools, pool_uris):
    admin = pools
    shown = admin.get("/v2/pools/one").json
    assert shown == {"name": "one", "href": "/v2/pools/one", "uri": pool_uris["one"],
                     "weight": 10, "flavor": None}
    assert admin.get("/v2/pools/one", params={"detailed": "true"}).json["options"] == {}
    patched = admin.patch("/v2/pools/one", json={"weight": 5, "options": {"a": 1}})
    assert patched.status_code == 200
    assert patched.json["weight"] == 5 and patched.json["options"] == {"a": 1}
    page = admin.get("/v2/pools", params={"limit": 1}).json
    assert [p["name"] for p in page["pools"]] == ["one"]
    rest = admin.get(page["links"][0]["href"]).json
    assert [p["name"] for p in rest["pools"]] == ["two"]
    assert admin.get(rest["links"][0]["href"]).json == {"pools": [], "links": []}
    assert admin.delete("/v2/pools/two").status_code == 204
    assert admin.delete("/v2/pools/two").status_code == 204  # absent: still 204
    assert_error(admin.get("/v2/pools/two"), 404, "'two'")


def test_pool_bodies_are_checked(admin, pool_uris):
    assert_error(admin.put("/v2/pools/p", json={"uri": pool_uris["one"]}), 400, "weight")
    assert_error(admin.put("/v2/pools/p", json={"uri": pool_uris["one"], "weight": -1}), 400)
    assert_error(admin.put("/v2/pools/p", json={"uri": "nope", "weight": 1}), 400, "uri")
    assert_error(
        admin.put("/v2/pools/p", json={"uri": pool_uris["one"], "weight": 1, "x": 1}), 400, "x"
    )
    assert_error(admin.put("/v2/pools/b@d", json={"uri": pool_uris["one"], "weight": 1}), 400)
    assert_error(admin.patch("/v2/pools/p", json={}), 400, "at least one")


def test_unreachable_pool_is_refused(admin):
    result = admin.put(
        "/v2/pools/p", json={"uri": "postgresql://nobody:secret@127.0.0.1:1/x", "weight": 1}
    )
    assert_error(result, 400, "unreachable")
    assert "secret" not in result.json["description"]
    assert_error(admin.get("/v2/pools/p"), 404)


def test_duplicate_name_or_uri_is_a_conflict(pools, pool_uris):
    assert_error(pools.put("/v2/pools/one", json={"uri": pool_uris["three"], "weight": 1}),
                 409, "'one' already exists")
    assert_error(pools.put("/v2/pools/other", json={"uri": pool_uris["one"], "weight": 1}),
                 409, "already registered as pool 'one'")
    assert_error(pools.patch("/v2/pools/two", json={"uri": pool_uris["one"]}), 409, "'one'")


def test_flavors_create_get_patch_list_delete(pools):
    admin = pools
    assert admin.put("/v2/flavors/fast", json={"pool_list": ["one"]}).status_code == 201
    assert admin.get("/v2/flavors/fast").json == {
        "name": "fast", "href": "/v2/flavors/fast", "pool_list": ["one"]}
    assert admin.get("/v2/pools/one").json["flavor"] == "fast"
    patched = admin.patch("/v2/flavors/fast",
                          json={"pool_list": ["two"], "capabilities": {"durable": True}})
    assert patched.json["pool_list"] == ["two"]
    assert patched.json["capabilities"] == {"durable": True}
    assert admin.get("/v2/pools/one").json["flavor"] is None
    listed = admin.get("/v2/flavors", params={"detailed": "true"}).json
    assert listed["flavors"][0]["capabilities"] == {"durable": True}
    assert listed["links"][0]["href"].startswith("/v2/flavors?marker=fast")
    assert_error(admin.put("/v2/flavors/fast", json={"pool_list": ["one"]}), 409)
    assert_error(admin.put("/v2/flavors/slow", json={"pool_list": ["two"]}), 409, "'fast'")
    assert_error(admin.put("/v2/flavors/slow", json={"pool_list": ["zzz"]}), 400, "'zzz'")
    assert_error(admin.put("/v2/flavors/slow", json={"pool_list": []}), 400)
    assert admin.delete("/v2/flavors/fast").status_code == 204
    assert admin.get("/v2/pools/two").json["flavor"] is None
    assert_error(admin.get("/v2/flavors/fast"), 404)


def test_pool_deletion_refusals_name_what_blocks_it(pools, user):
    admin = pools
    admin.put("/v2/flavors/fast", json={"pool_list": ["one", "two"]})
    assert user.put("/v2/queues/q", json={"_flavor": "fast"}).status_code == 201
    pool = admin.get("/v2/pools/one").json["name"]
    in_flavor = admin.delete(f"/v2/pools/{pool}")
    assert_error(in_flavor, 403, "flavor 'fast'")
    admin.delete("/v2/flavors/fast")
    holder = next(
        name for name in ("one", "two")
        if admin.delete(f"/v2/pools/{name}").status_code == 409
    )
    result = admin.delete(f"/v2/pools/{holder}")
    assert_error(result, 409, "1 queue(s)")
    assert "'q'" in result.json["description"]
    assert user.delete("/v2/queues/q").status_code == 204
    assert admin.delete(f"/v2/pools/{holder}").status_code == 204


def test_queue_flavor_must_exist_when_pooling(pools, user):
    assert_error(user.put("/v2/queues/q", json={"_flavor": "ghost"}), 400, "'ghost'")
    pools.put("/v2/flavors/fast", json={"pool_list": ["two"]})
    assert user.put("/v2/queues/q", json={"_flavor": "fast"}).status_code == 201
    assert user.get("/v2/queues/q").json["_flavor"] == "fast"


def test_dead_letter_refusal_over_http_names_both_pools(pools, user, admin):
    admin.patch("/v2/pools/two", json={"weight": 0})
    user.put("/v2/queues/a")
    admin.patch("/v2/pools/two", json={"weight": 10})
    admin.patch("/v2/pools/one", json={"weight": 0})
    user.put("/v2/queues/b")
    result = user.patch_metadata(
        "a", [{"op": "add", "path": "/metadata/_dead_letter_queue", "value": "b"}]
    )
    assert_error(result, 409, "pool 'two'")
    assert "pool 'one'" in result.json["description"]


def test_queue_listing_pages_across_pools(pools, user):
    for i in range(7):
        assert user.put(f"/v2/queues/q{i}").status_code == 201
    seen, href = [], "/v2/queues?limit=3"
    while True:
        body = user.get(href).json
        if not body["queues"]:
            break
        seen += [q["name"] for q in body["queues"]]
        href = body["links"][0]["href"]
    assert seen == [f"q{i}" for i in range(7)]


def test_health_reports_each_pool(pools):
    body = pools.get("/v2/health").json
    assert set(body) == {"one", "two"}
    assert all(report["storage_reachable"] for report in body.values())


def test_health_shows_an_unreachable_pool(pools, pool_uris, tmp_path):
    # A pool whose database file turned into a directory cannot be opened.
    bad = tmp_path / "bad.sqlite3"
    pools.put("/v2/pools/bad", json={"uri": f"sqlite:///{bad}", "weight": 1})
    bad.unlink()
    bad.mkdir()
    body = pools.get("/v2/health").json
    assert body["bad"] == {"storage_reachable": False, "operation_status": {}}
    assert body["one"]["storage_reachable"] is True


def test_without_pooling_the_admin_routes_say_so(clock, tmp_path, project):
    config = Config().with_overrides(storage={"uri": f"sqlite:///{tmp_path}/s.sqlite3"})
    admin = AdminApi(create_app(config, clock=clock), project)
    assert_error(admin.get("/v2/pools"), 404, "--pooling")


def test_a_pool_in_a_missing_directory_is_400_and_no_directory_is_made(pools, tmp_path):
    missing = tmp_path / "nonexistent-dir"
    uri = f"sqlite:///{missing}/z.sqlite3"
    assert_error(pools.put("/v2/pools/p", json={"uri": uri, "weight": 1}), 400, str(missing))
    assert_error(pools.patch("/v2/pools/one", json={"uri": uri}), 400, "does not exist")
    assert not missing.exists()
    assert_error(pools.get("/v2/pools/p"), 404)


@pytest.mark.parametrize(("uri", "named"), [
    ("redis://127.0.0.1:6379/0?foo=1", "'foo'"),
    ("redis://127.0.0.1:6379/0?prefix=zq&socket_timeout=1&bogus_option=2", "'bogus_option'"),
    ("sqlite://relative.db", "sqlite:///relative.db"),
])
def test_a_malformed_pool_uri_is_400_saying_what_is_wrong(admin, uri, named):
    result = admin.put("/v2/pools/p", json={"uri": uri, "weight": 1})
    assert_error(result, 400, named)
    assert "unreachable" not in result.json["description"]
