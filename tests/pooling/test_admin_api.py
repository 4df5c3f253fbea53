"""The admin API: /v2/pools, /v2/flavors and per-pool health over HTTP."""

from __future__ import annotations

import pytest

from tests.api.helpers import Api, assert_error
from zq.api import create_app
from zq.config import Config
from zq.errors import StorageUnavailable
from zq.pooling.admin import _cause

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


def test_an_unreachable_pool_says_why_in_the_answer_and_the_log(admin, caplog):
    # Not only "Cannot use the storage backend.": the driver's cause, one line,
    # the password hidden (also where a driver would echo it).
    uri = "postgresql://nobody:s3cr%40t@127.0.0.1:1/x"
    with caplog.at_level("WARNING", logger="zq.pooling.admin"):
        result = admin.put("/v2/pools/p", json={"uri": uri, "weight": 1})
    assert_error(result, 400, "unreachable")
    description = result.json["description"]
    assert "connection refused" in description.lower(), description
    assert "127.0.0.1" in description and "\n" not in description
    logged = [r.getMessage() for r in caplog.records if r.name == "zq.pooling.admin"]
    assert len(logged) == 1 and "connection refused" in logged[0].lower(), logged
    for shown in (description, logged[0]):
        assert "s3cr" not in shown and "***" in shown, shown


def test_a_cause_never_shows_the_password_even_when_a_driver_echoes_it():
    uri = "mysql://root:p%40ss@127.0.0.1:1/x"
    error = StorageUnavailable("Cannot use the storage backend.",
                               detail="login root/p@ss refused\nsecond line p%40ss")
    assert _cause(error, uri) == (
        "Cannot use the storage backend: login root/*** refused second line ***")


def test_put_overwrites_a_pool_but_not_another_pools_uri(pools, pool_uris):
    # zaqar/storage/mongodb/pools.py _create: an upsert by name.
    again = pools.put("/v2/pools/one", json={"uri": pool_uris["three"], "weight": 7,
                                              "options": {"a": 1}})
    assert again.status_code == 201
    shown = pools.get("/v2/pools/one", params={"detailed": "true"}).json
    assert (shown["uri"], shown["weight"], shown["options"]) == (pool_uris["three"], 7, {"a": 1})
    assert_error(pools.put("/v2/pools/other", json={"uri": pool_uris["two"], "weight": 1}),
                 409, "already registered as pool 'two'")
    assert_error(pools.patch("/v2/pools/two", json={"uri": pool_uris["three"]}), 409, "'one'")


def test_put_keeps_the_uri_of_a_pool_that_holds_queues(pools, user, pool_uris):
    assert user.put("/v2/queues/q").status_code == 201
    holder = next(n for n in ("one", "two") if pools.delete(f"/v2/pools/{n}").status_code == 409)
    uri = pools.get(f"/v2/pools/{holder}").json["uri"]
    moved = pools.put(f"/v2/pools/{holder}", json={"uri": pool_uris["three"], "weight": 3})
    assert_error(moved, 409, "PATCH the uri")
    assert pools.get(f"/v2/pools/{holder}").json["uri"] == uri
    # The same URI with other settings is an overwrite, queues or not.
    assert pools.put(f"/v2/pools/{holder}", json={"uri": uri, "weight": 3}).status_code == 201
    assert pools.get(f"/v2/pools/{holder}").json["weight"] == 3


def test_pool_patch_ignores_unknown_fields_and_clears_the_flavor(pools):
    pools.put("/v2/flavors/fast", json={"pool_list": ["one", "two"]})
    patched = pools.patch("/v2/pools/one", json={"weight": 4, "group": "x", "nonsense": 1})
    assert patched.status_code == 200 and patched.json["weight"] == 4
    assert_error(pools.patch("/v2/pools/one", json={"nonsense": 1}), 400, "at least one")
    cleared = pools.patch("/v2/pools/one", json={"flavor": ""})
    assert cleared.status_code == 200 and cleared.json["flavor"] is None
    assert pools.get("/v2/flavors/fast").json["pool_list"] == ["two"]
    flavor = pools.patch("/v2/flavors/fast", json={"capabilities": {"d": 1}, "pool": "x"})
    assert flavor.status_code == 200 and flavor.json["capabilities"] == {"d": 1}


def test_listing_next_links_keep_every_query_parameter(pools):
    pools.put("/v2/flavors/a", json={"pool_list": ["one"]})
    pools.put("/v2/flavors/b", json={"pool_list": ["two"]})
    for path, key in (("/v2/pools", "pools"), ("/v2/flavors", "flavors")):
        first = pools.get(path, params={"limit": 1, "detailed": "true"}).json
        href = first["links"][0]["href"]
        assert "detailed=true" in href and "limit=1" in href, href
        second = pools.get(href).json[key]
        assert len(second) == 1 and second[0]["name"] != first[key][0]["name"]
        assert ("options" if key == "pools" else "capabilities") in second[0]


def test_a_flavor_over_a_missing_pool_is_unable_to_create_as_in_zaqar(pools):
    # Zaqar's flavors.py: title "Unable to create" for a pool_list naming a
    # pool that does not exist; the description names the flavor and the pool.
    refused = pools.put("/v2/flavors/test-flavor", json={"pool_list": ["one", "mypool"]})
    assert_error(refused, 400, "'mypool'")
    assert refused.json["title"] == "Unable to create"
    assert "'test-flavor' could not be created" in refused.json["description"]
    assert pools.get("/v2/flavors/test-flavor").status_code == 404
    assert pools.get("/v2/pools/one").json["flavor"] is None  # nothing half-done
    # A PATCH is not a create: its refusal keeps the generic title.
    pools.put("/v2/flavors/f", json={"pool_list": ["one"]})
    patched = pools.patch("/v2/flavors/f", json={"pool_list": ["mypool"]})
    assert_error(patched, 400, "'mypool'")
    assert patched.json["title"] == "Invalid request"


def test_listing_next_links_write_booleans_as_zaqar_does(pools):
    # python-zaqarclient sends detailed=True (Python's spelling); Zaqar's link
    # says true/false whatever the request's spelling was.
    pools.put("/v2/flavors/a", json={"pool_list": ["one"]})
    pools.put("/v2/flavors/b", json={"pool_list": ["two"]})
    for path in ("/v2/pools", "/v2/flavors"):
        for sent, written in (("True", "true"), ("False", "false"), ("1", "true"),
                              ("no", "false")):
            href = pools.get(path, params={"limit": 1, "detailed": sent,
                                           "include_history": sent}).json["links"][0]["href"]
            assert f"detailed={written}" in href and f"include_history={written}" in href, href
        plain = pools.get(path, params={"limit": 1}).json["links"][0]["href"]
        assert "detailed" not in plain, plain  # not given, not added (as Zaqar)


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
    assert listed["links"][0]["href"] == "/v2/flavors?marker=fast&detailed=true"
    overwritten = admin.put("/v2/flavors/fast", json={"pool_list": ["one"]})
    assert overwritten.status_code == 201  # PUT overwrites, as Zaqar
    assert admin.get("/v2/flavors/fast").json["pool_list"] == ["one"]
    assert admin.get("/v2/flavors/fast", params={"detailed": "true"}).json[
        "capabilities"] == {}
    assert admin.get("/v2/pools/two").json["flavor"] is None
    admin.patch("/v2/flavors/fast", json={"pool_list": ["two"]})
    assert_error(admin.put("/v2/flavors/slow", json={"pool_list": ["two"]}), 409, "'fast'")
    assert_error(admin.put("/v2/flavors/slow", json={"pool_list": ["zzz"]}), 400, "'zzz'")
    assert_error(admin.put("/v2/flavors/slow", json={"pool_list": []}), 400)
    assert admin.delete("/v2/flavors/fast").status_code == 204
    assert admin.get("/v2/pools/two").json["flavor"] is None
    assert_error(admin.get("/v2/flavors/fast"), 404)


def test_pool_deletion_refusals_name_what_blocks_it(pools, user):
    # zaqar/storage/mongodb/pools.py _delete: refused (403) only for the
    # flavor's last pool; another pool of the flavor just leaves its list.
    admin = pools
    admin.put("/v2/flavors/fast", json={"pool_list": ["one", "two"]})
    assert user.put("/v2/queues/q", json={"_flavor": "fast"}).status_code == 201
    holder = "one" if admin.delete("/v2/pools/one").status_code == 409 else "two"
    other = "two" if holder == "one" else "one"
    assert admin.delete(f"/v2/pools/{other}").status_code == 204  # not the last: it goes
    assert_error(admin.get(f"/v2/pools/{other}"), 404)
    assert admin.get("/v2/flavors/fast").json["pool_list"] == [holder]
    assert_error(admin.delete(f"/v2/pools/{holder}"), 403, "only pool of flavor 'fast'")
    admin.delete("/v2/flavors/fast")
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


def test_queue_listing_metadata_filter_pages_across_pools(pools, user):
    for i in range(9):
        meta = {"team": "ops"} if i % 3 == 0 else {"team": "dev"}
        assert user.put(f"/v2/queues/q{i}", json=meta).status_code == 201
    seen, href = [], "/v2/queues?limit=2&team=ops&with_count=true"
    while True:
        body = user.get(href).json
        if not body["queues"]:
            break
        assert body["count"] == 3
        seen += [q["name"] for q in body["queues"]]
        href = body["links"][0]["href"]
    assert seen == ["q0", "q3", "q6"]


def test_health_reports_each_pool(pools, user):
    # zaqar/storage/pooling.py _health: one report per pool, each with its
    # own message_volume (not summed).
    user.post("/v2/queues/q/messages", json={"messages": [{"body": 1}, {"body": 2}]})
    body = pools.get("/v2/health").json
    assert set(body) == {"one", "two"}
    assert all(report["storage_reachable"] for report in body.values())
    volumes = sorted(tuple(r["message_volume"].values()) for r in body.values())
    assert volumes == [(0, 0, 0), (2, 0, 2)]


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


@pytest.mark.parametrize("name", [".", "..", "one%0A", "o%00ne"])
def test_pool_and_flavor_names_that_are_path_segments_or_hold_controls_are_400(
    pools, pool_uris, name
):
    admin = pools
    result = admin.put(f"/v2/pools/{name}", json={"uri": pool_uris["one"], "weight": 1})
    assert_error(result, 400, "Pool name")
    assert_error(admin.put(f"/v2/flavors/{name}", json={"pool_list": ["one"]}), 400,
                 "Flavor name")
    assert [p["name"] for p in admin.get("/v2/pools").json["pools"]] == ["one", "two"]
    assert admin.get("/v2/flavors").json["flavors"] == []


@pytest.mark.parametrize("flavor", [".", "..", "f\n"])
def test_a_pool_flavor_must_be_a_name(pools, flavor):
    assert_error(pools.patch("/v2/pools/one", json={"flavor": flavor}), 400, "flavor")
    assert pools.get("/v2/pools/one").json["flavor"] is None


@pytest.mark.parametrize("path", ["/v2/pools", "/v2/flavors"])
def test_pool_and_flavor_listing_markers_are_names(pools, path):
    assert_error(pools.get(path, params={"marker": "\x00"}), 400, "marker")
    assert pools.get(path, params={"marker": "one"}).status_code == 200
