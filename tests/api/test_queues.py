"""Queues: create, metadata, patch, list, delete, stats, purge."""

from __future__ import annotations

from tests.api.helpers import PATCH_TYPE, assert_error

RESERVED_DEFAULTS = {
    "_default_message_ttl": 3600,
    "_default_message_delay": 0,
    "_max_messages_post_size": 262144,
    "_enable_encrypt_messages": False,  # as Zaqar shows it
}


def test_put_creates_then_reports_existing(api):
    first = api.put("/v2/queues/orders", json={"color": "red"})
    assert first.status_code == 201
    assert first.headers["Location"] == "/v2/queues/orders"
    assert first.text == ""
    second = api.put("/v2/queues/orders", json={"color": "blue"})
    assert second.status_code == 204
    assert second.headers["Location"] == "/v2/queues/orders"
    # The existing queue's metadata was not changed.
    assert api.get("/v2/queues/orders").json["color"] == "red"


def test_put_without_body(api):
    assert api.put("/v2/queues/q").status_code == 201
    assert api.get("/v2/queues/q").json == RESERVED_DEFAULTS


def test_get_shows_reserved_defaults_and_own_keys(api):
    api.put("/v2/queues/q", json={"color": "red", "_default_message_ttl": 120})
    result = api.get("/v2/queues/q")
    assert result.status_code == 200
    assert result.json == {**RESERVED_DEFAULTS, "color": "red", "_default_message_ttl": 120}


def test_get_of_a_never_created_queue_is_lazy(api):
    result = api.get("/v2/queues/never-made")
    assert result.status_code == 200
    assert result.json == RESERVED_DEFAULTS


def test_put_refuses_bad_names_and_metadata(api):
    assert_error(api.put("/v2/queues/bad%20name"), 400, "Queue name")
    assert_error(api.put("/v2/queues/" + "x" * 65), 400, "64")
    assert_error(api.put("/v2/queues/q", json=[1]), 400, "JSON object")
    assert_error(api.put("/v2/queues/q", body="{nope"), 400, "not valid JSON")
    assert_error(
        api.put("/v2/queues/q", json={"_default_message_ttl": 30}), 400,
        "_default_message_ttl must be between 60 and 1209600",
    )
    assert_error(api.put("/v2/queues/q", json={"_max_claim_count": 0}), 400, "_max_claim_count")
    assert_error(
        api.put("/v2/queues/q", json={"big": "x" * 70000}), 400, "Queue metadata is too large"
    )
    # Nothing was created by the refused requests.
    assert api.get("/v2/queues").json["queues"] == []


def test_patch_applies_operations_in_order(api):
    api.put("/v2/queues/q", json={"a": 1, "b": 2})
    result = api.patch_metadata("q", [
        {"op": "add", "path": "/metadata/c", "value": [3]},
        {"op": "replace", "path": "/metadata/a", "value": "one"},
        {"op": "remove", "path": "/metadata/b"},
        {"op": "replace", "path": "/metadata/_default_message_ttl", "value": 600},
    ])
    assert result.status_code == 200
    expected = {**RESERVED_DEFAULTS, "a": "one", "c": [3], "_default_message_ttl": 600}
    assert result.json == expected
    assert api.get("/v2/queues/q").json == expected


def test_patch_removing_reserved_key_restores_default(api):
    api.put("/v2/queues/q", json={"_default_message_delay": 30})
    result = api.patch_metadata("q", [{"op": "remove", "path": "/metadata/_default_message_delay"}])
    assert result.json["_default_message_delay"] == 0
    # Removing an unset reserved key is not a conflict.
    again = api.patch_metadata("q", [{"op": "remove", "path": "/metadata/_max_claim_count"}])
    assert again.status_code == 200


def test_patch_conflicts_on_absent_ordinary_key(api):
    api.put("/v2/queues/q", json={"a": 1})
    for op in ("replace", "remove"):
        ops = [{"op": op, "path": "/metadata/missing", "value": 1}]
        assert_error(api.patch_metadata("q", ops), 409, "missing")
    # A failed patch changes nothing, even its earlier operations.
    ops = [{"op": "add", "path": "/metadata/b", "value": 2},
           {"op": "remove", "path": "/metadata/missing"}]
    assert_error(api.patch_metadata("q", ops), 409)
    assert "b" not in api.get("/v2/queues/q").json


def test_patch_of_a_never_created_queue_is_404(api):
    ops = [{"op": "add", "path": "/metadata/a", "value": 1}]
    assert_error(api.patch_metadata("ghost", ops), 404)


def test_patch_needs_the_json_patch_media_type(api):
    api.put("/v2/queues/q")
    result = api.patch("/v2/queues/q", json=[{"op": "add", "path": "/metadata/a", "value": 1}])
    assert_error(result, 415, PATCH_TYPE)
    assert result.headers["Accept-Patch"] == PATCH_TYPE


def test_patch_refuses_bad_documents(api):
    api.put("/v2/queues/q")
    assert_error(api.patch("/v2/queues/q", headers={"Content-Type": PATCH_TYPE}), 400, "array")
    assert_error(api.patch_metadata("q", [{"op": "copy", "path": "/metadata/a"}]), 400, "op")
    assert_error(api.patch_metadata("q", [{"op": "add", "path": "/x/a", "value": 1}]), 400,
                 "/metadata/KEY")
    assert_error(api.patch_metadata("q", [{"op": "add", "path": "/metadata/a"}]), 400, "value")
    assert_error(
        api.patch_metadata("q", [{"op": "add", "path": "/metadata/_default_message_delay",
                                  "value": 901}]),
        400, "_default_message_delay must be between 0 and 900",
    )


def test_delete_is_204_also_when_absent(api):
    api.put("/v2/queues/q")
    api.post_messages("q", {"body": 1})
    assert api.delete("/v2/queues/q").status_code == 204
    assert api.get("/v2/queues").json["queues"] == []
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 0
    assert api.delete("/v2/queues/q").status_code == 204


def test_list_pages_with_links(api):
    for name in ("c", "a", "b"):
        api.put(f"/v2/queues/{name}")
    first = api.get("/v2/queues", params={"limit": 2})
    assert first.status_code == 200
    assert first.json["queues"] == [
        {"name": "a", "href": "/v2/queues/a"},
        {"name": "b", "href": "/v2/queues/b"},
    ]
    [link] = first.json["links"]
    assert link["rel"] == "next"
    assert "marker=b" in link["href"] and "limit=2" in link["href"]
    second = api.get(link["href"])
    assert [q["name"] for q in second.json["queues"]] == ["c"]
    third = api.get(second.json["links"][0]["href"])
    assert third.json == {"queues": [], "links": []}


def test_list_detailed_count_and_name_filter(api):
    api.put("/v2/queues/jobs-1", json={"k": 1})
    api.put("/v2/queues/jobs-2")
    api.put("/v2/queues/other")
    result = api.get("/v2/queues", params={"detailed": "true", "with_count": "true",
                                           "name": "jobs"})
    assert result.json["count"] == 2
    assert [q["name"] for q in result.json["queues"]] == ["jobs-1", "jobs-2"]
    assert result.json["queues"][0]["metadata"] == {**RESERVED_DEFAULTS, "k": 1}
    assert "count" not in api.get("/v2/queues").json


def test_list_is_per_project(api, app):
    from tests.api.helpers import Api

    api.put("/v2/queues/mine")
    stranger = Api(app, "someone-else-" + api.project)
    assert stranger.get("/v2/queues").json["queues"] == []
    assert stranger.get("/v2/queues/mine/stats").json["messages"]["total"] == 0


def test_list_refuses_bad_limits(api):
    assert_error(api.get("/v2/queues", params={"limit": 0}), 400, "limit")
    assert_error(api.get("/v2/queues", params={"limit": 21}), 400, "between 1 and 20")
    assert_error(api.get("/v2/queues", params={"limit": "x"}), 400)


def test_stats_counts_and_stamps(api, clock):
    assert api.get("/v2/queues/q/stats").json == {
        "messages": {"free": 0, "claimed": 0, "delayed": 0, "total": 0}, "waiting": 0
    }
    first, _, last = api.post_messages("q", {"body": 1}, {"body": 2}, {"body": 3})
    api.claim("q", limit=1)
    clock.advance(5)
    stats = api.get("/v2/queues/q/stats").json["messages"]
    assert (stats["free"], stats["claimed"], stats["total"]) == (2, 1, 3)
    assert stats["oldest"] == {
        "id": first, "href": f"/v2/queues/q/messages/{first}", "age": 5,
        "created": "2023-11-14T22:13:20Z",
    }
    assert stats["newest"]["id"] == last


def test_purge_removes_messages_keeps_queue(api):
    api.put("/v2/queues/q", json={"k": 1})
    api.post_messages("q", {"body": 1}, {"body": 2})
    assert api.post("/v2/queues/q/purge", json={"resource_types": ["messages"]}).status_code == 204
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 0
    assert api.get("/v2/queues/q").json["k"] == 1
    api.post_messages("q", {"body": 1})
    assert api.post("/v2/queues/q/purge").status_code == 204
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 0


def test_purge_subscriptions_only_keeps_messages(api):
    api.post_messages("q", {"body": 1})
    result = api.post("/v2/queues/q/purge", json={"resource_types": ["subscriptions"]})
    assert result.status_code == 204
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 1


def test_purge_refuses_unknown_resource_types(api):
    assert_error(api.post("/v2/queues/q/purge", json={"resource_types": ["claims"]}), 400,
                 "resource_types")
