"""Backoff over HTTP: the reserved keys, and a poison head that no longer clogs."""

from __future__ import annotations

import pytest

from tests.api.helpers import assert_error


def test_backoff_keys_round_trip(api):
    settings = {"_retry_delay": 5, "_retry_max_delay": 300, "_retry_backoff": "linear"}
    assert api.put("/v2/queues/q", json=settings).status_code == 201
    shown = api.get("/v2/queues/q").json
    assert {k: shown[k] for k in settings} == settings


def test_backoff_keys_are_hidden_until_set(api):
    assert not {"_retry_delay", "_retry_max_delay", "_retry_backoff"} & set(
        api.get("/v2/queues/q").json)


@pytest.mark.parametrize(("metadata", "fragment"), [
    ({"_retry_delay": 901}, "_retry_delay must be between 0 and 900"),
    ({"_retry_delay": "5"}, "_retry_delay must be an integer"),
    ({"_retry_delay": 10, "_retry_max_delay": 5}, "must be at least _retry_delay"),
    ({"_retry_delay": 10, "_retry_backoff": "cubic"}, "_retry_backoff must be one of"),
    ({"_retry_backoff": "fixed"}, "cannot take effect without _retry_delay"),
    # One rule: a _retry_delay of 0 is no backoff, as unset is.
    ({"_retry_delay": 0, "_retry_backoff": "linear"},
     "_retry_backoff cannot take effect without _retry_delay above 0"),
    ({"_retry_delay": 0, "_retry_max_delay": 0},
     "_retry_max_delay cannot take effect without _retry_delay above 0"),
])
def test_bad_backoff_settings_are_400(api, metadata, fragment):
    assert_error(api.put("/v2/queues/q", json=metadata), 400, fragment)
    api.put("/v2/queues/p")
    patch = [{"op": "add", "path": f"/metadata/{k}", "value": v} for k, v in metadata.items()]
    assert_error(api.patch_metadata("p", patch), 400, fragment)


def test_removing_the_delay_alone_is_refused(api):
    api.put("/v2/queues/q", json={"_retry_delay": 5, "_retry_max_delay": 60})
    patch = [{"op": "remove", "path": "/metadata/_retry_delay"}]
    assert_error(api.patch_metadata("q", patch), 400, "_retry_max_delay cannot take effect")


def test_setting_the_delay_to_0_alone_is_refused_as_removing_it_is(api):
    api.put("/v2/queues/q", json={"_retry_delay": 5, "_retry_backoff": "linear"})
    patch = [{"op": "replace", "path": "/metadata/_retry_delay", "value": 0}]
    assert_error(api.patch_metadata("q", patch), 400, "_retry_backoff cannot take effect")
    # Turning backoff off with its companions is fine; so is a bare 0.
    patch.append({"op": "remove", "path": "/metadata/_retry_backoff"})
    assert api.patch_metadata("q", patch).status_code == 200
    assert api.put("/v2/queues/r", json={"_retry_delay": 0}).status_code == 201


def test_a_released_poison_head_backs_off_and_good_messages_flow(api, clock):
    api.put("/v2/queues/q", json={"_retry_delay": 30, "_retry_max_delay": 120})
    poison, *good = api.post_messages("q", *({"body": n} for n in range(3)))
    head = api.claim("q", limit=1)
    assert [m["id"] for m in head.json["messages"]] == [poison]
    assert api.delete(head.headers["Location"]).status_code == 204
    stats = api.get("/v2/queues/q/stats").json["messages"]
    assert (stats["free"], stats["claimed"], stats["delayed"], stats["total"]) == (3, 0, 1, 3)
    behind = api.claim("q", limit=10)
    assert [m["id"] for m in behind.json["messages"]] == good
    clock.advance(30)
    again = api.claim("q", limit=10)
    assert [(m["id"], m["claim_count"]) for m in again.json["messages"]] == [(poison, 2)]
