"""Subscriptions over HTTP, as Zaqar v2 answers them."""

from __future__ import annotations

import pytest

from tests.api.helpers import Api, assert_error

HOOK = "http://example.com/hook"
BASE = "/v2/queues/q/subscriptions"


def subscribe(api, queue="q", **document):
    document.setdefault("subscriber", HOOK)
    return api.post(f"/v2/queues/{queue}/subscriptions", json=document)


def created_id(result) -> str:
    assert result.status_code == 201, result.text
    return result.json["subscription_id"]


def test_create_then_get_shows_zaqar_shape(api, clock):
    result = subscribe(api, ttl=600, options={"k": "v"})
    assert result.status_code == 201
    assert result.headers["Location"] == BASE
    assert set(result.json) == {"subscription_id"}
    sid = result.json["subscription_id"]
    clock.advance(30)
    got = api.get(f"{BASE}/{sid}")
    assert got.status_code == 200
    assert got.json == {"id": sid, "source": "q", "subscriber": HOOK, "ttl": 600, "age": 30,
                        "options": {"k": "v"}, "confirmed": False}


def test_create_takes_default_ttl_and_options_and_creates_the_queue(api):
    sid = created_id(subscribe(api))
    got = api.get(f"{BASE}/{sid}").json
    assert (got["ttl"], got["options"]) == (3600, {})
    names = [q["name"] for q in api.get("/v2/queues").json["queues"]]
    assert names == ["q"]


def test_repeated_create_of_an_unconfirmed_subscription_answers_its_id(api):
    sid = created_id(subscribe(api))
    again = subscribe(api, ttl=900)
    assert again.status_code == 201
    assert again.json == {"subscription_id": sid}
    assert api.get(f"{BASE}/{sid}").json["ttl"] == 3600  # unchanged


def test_repeated_create_of_a_confirmed_subscription_is_409(api):
    sid = created_id(subscribe(api))
    assert api.put(f"{BASE}/{sid}/confirm", json={"confirmed": True}).status_code == 204
    again = subscribe(api)
    assert_error(again, 409, "Such subscription already exists.Subscriptions are unique by "
                             "project + queue + subscriber URI.")
    assert again.headers["Location"] == BASE


@pytest.mark.parametrize(("document", "fragment"), [
    ({"ttl": 600}, "Missing parameter subscriber in body."),
    ({"subscriber": "ftp://example.com/x"},
     "The subscriber type of subscription must be supported in the list "
     "['http', 'https', 'mailto']."),
    ({"subscriber": "example.com/x"}, "must be supported in the list"),
    ({"subscriber": ""}, "must be supported in the list"),
    ({"subscriber": 7}, "must be supported in the list"),
    ({"subscriber": "http:///nohost"}, "names no host"),
    ({"subscriber": "mailto:nobody"}, "names no mail address"),
    ({"subscriber": "mailto:a@x.com,b@y.org?from=ceo@bank.example"},
     "a mailto: subscriber takes no query"),
    ({"subscriber": "mailto:a@x.com?subject=hi"}, "a mailto: subscriber takes no query"),
    ({"subscriber": "mailto:a@x.com,b@y.org"},
     "a mailto: subscriber names exactly one plain address"),
    ({"subscriber": "http://h/" + "x" * 2048}, "may not be more than 2048 characters"),
    ({"subscriber": HOOK, "options": [1]}, "Options must be a dict."),
    ({"subscriber": HOOK, "options": "x"}, "Options must be a dict."),
    ({"subscriber": HOOK, "ttl": "60"}, "TTL must be an integer."),
    ({"subscriber": HOOK, "ttl": 60.5}, "TTL must be an integer."),
    ({"subscriber": HOOK, "ttl": True}, "TTL must be an integer."),
    ({"subscriber": HOOK, "ttl": 59}, "The TTL for a subscription must be at least 60 "
                                      "seconds long."),
    ({"subscriber": HOOK, "ttl": 0}, "must be at least 60 seconds long."),
    ({"subscriber": HOOK, "ttl": 2**31}, "may not exceed 2147483647 seconds."),
    ({"subscriber": HOOK, "confirmed": True}, "Unknown subscription fields ['confirmed']"),
])
def test_create_refuses_bad_documents(api, document, fragment):
    assert_error(subscribe_raw(api, document), 400, fragment)


def subscribe_raw(api, document):
    return api.post(BASE, json=document)


@pytest.mark.parametrize(("body", "fragment"), [
    (None, "Missing parameter subscriber in body."),
    ({}, "Missing parameter subscriber in body."),
    ([], "Subscriptions must be a dict."),
    ([1], "Subscriptions must be a dict."),
])
def test_create_refuses_empty_and_non_object_bodies(api, body, fragment):
    result = api.post(BASE) if body is None else api.post(BASE, json=body)
    assert_error(result, 400, fragment)
    assert api.get(BASE).json["subscriptions"] == []


def test_create_refuses_a_bad_queue_name(api):
    assert_error(subscribe(api, queue="bad$name"), 400)


def test_https_and_mailto_subscribers_are_accepted(api):
    for subscriber in ("https://example.com/x?a=1", "mailto:ops@example.com"):
        sid = created_id(subscribe(api, subscriber=subscriber))
        assert api.get(f"{BASE}/{sid}").json["subscriber"] == subscriber


def test_unknown_subscription_is_404_to_read_and_204_to_delete(api):
    for sid in ("0b7a8f3e-0000-4000-8000-000000000000", "not-an-id", "x" * 300):
        assert_error(api.get(f"{BASE}/{sid}"), 404, f"Subscription {sid} does not exist")
        assert api.delete(f"{BASE}/{sid}").status_code == 204
        assert_error(api.patch(f"{BASE}/{sid}", json={"ttl": 100}), 404)
        assert_error(api.put(f"{BASE}/{sid}/confirm", json={"confirmed": True}), 404)


def test_list_pages_with_zaqar_links(api):
    made = sorted(created_id(subscribe(api, subscriber=f"http://h/{n}")) for n in range(5))
    first = api.get(BASE, params={"limit": 2})
    assert first.status_code == 200
    assert [s["id"] for s in first.json["subscriptions"]] == made[:2]
    assert first.json["links"] == [
        {"rel": "next", "href": f"{BASE}?limit=2&marker={made[1]}"}]
    second = api.get(first.json["links"][0]["href"])
    assert [s["id"] for s in second.json["subscriptions"]] == made[2:4]
    assert second.json["links"][0]["href"] == f"{BASE}?marker={made[3]}&limit=2"
    third = api.get(second.json["links"][0]["href"])
    assert [s["id"] for s in third.json["subscriptions"]] == made[4:]
    last = api.get(third.json["links"][0]["href"])
    assert last.json == {"subscriptions": [], "links": []}
    listed = api.get(BASE).json
    assert len(listed["subscriptions"]) == 5
    assert listed["links"] == [{"rel": "next", "href": f"{BASE}?marker={made[-1]}"}]
    assert listed["subscriptions"][0] == api.get(f"{BASE}/{made[0]}").json


@pytest.mark.parametrize("limit", ["0", "21", "-1"])
def test_list_limit_bounds(api, limit):
    assert_error(api.get(BASE, params={"limit": limit}), 400,
                 "Limit must be at least 1 and may not be greater than 20.")


def test_list_limit_must_be_an_integer(api):
    assert_error(api.get(BASE, params={"limit": "x"}), 400)


def test_list_with_a_marker_no_page_gave_is_empty(api):
    created_id(subscribe(api))
    assert api.get(BASE, params={"marker": "~" * 100}).json["subscriptions"] == []
    assert api.get(BASE, params={"marker": "~"}).json["subscriptions"] == []


def test_update_changes_fields_and_resets_expiry(api, clock):
    sid = created_id(subscribe(api, ttl=100))
    clock.advance(90)
    result = api.patch(f"{BASE}/{sid}", json={"ttl": 200, "options": {"a": 1},
                                               "subscriber": "mailto:a@b.c"})
    assert result.status_code == 204
    assert result.headers["Location"] == f"{BASE}/{sid}"
    clock.advance(150)  # past the first ttl, within the new one counted from the PATCH
    got = api.get(f"{BASE}/{sid}").json
    assert (got["ttl"], got["options"], got["subscriber"]) == (200, {"a": 1}, "mailto:a@b.c")
    assert got["age"] == 240


@pytest.mark.parametrize(("document", "status", "fragment"), [
    ({}, 400, "No subscription to create."),
    ([1], 400, "Subscriptions must be a dict."),
    ({"ttl": 10}, 400, "must be at least 60 seconds long."),
    ({"subscriber": "gopher://x"}, 400, "must be supported in the list"),
    ({"options": 3}, 400, "Options must be a dict."),
    ({"unknown": 1}, 400, "Unknown subscription fields ['unknown']"),
])
def test_update_refuses_bad_documents_and_changes_nothing(api, document, status, fragment):
    sid = created_id(subscribe(api))
    assert_error(api.patch(f"{BASE}/{sid}", json=document), status, fragment)
    got = api.get(f"{BASE}/{sid}").json
    assert (got["ttl"], got["subscriber"], got["options"]) == (3600, HOOK, {})


# What the notifier could never send: refused when created or changed, not
# retried for ever (issue 25).
UNSENDABLE = [
    ({"subscriber": "http://example.com/caf\u00e9"}, "must be visible ASCII"),
    ({"subscriber": "http://ex\u00e4mple.com/hook"}, "must be visible ASCII"),
    ({"subscriber": "http://example.com/a b"}, "must be visible ASCII"),
    ({"subscriber": "mailto:a@b.c?subject=hi%0d%0aBcc:%20x@evil.example"},
     "control character"),
    ({"subscriber": "mailto:a%0a@b.c"}, "control character"),
    ({"options": {"post_headers": {"X-Note": "caf\u00e9"}}}, "the value of 'X-Note'"),
    ({"options": {"post_headers": {"X-Note": "a\r\nX-Evil: 1"}}}, "no line breaks"),
    ({"options": {"post_headers": {"X-Count": 3}}}, "must be a string"),
    ({"options": {"post_headers": {"X Bad": "1"}}}, "is not a header name"),
    ({"options": {"post_headers": {"Host": "evil"}}}, "is set by zq"),
    ({"options": {"post_headers": ["X-A"]}}, "post_headers must be an object"),
    ({"options": {"_retry_policy": {"minimum_delay": 5, "maximum_delay": 2e7}}},
     "options._retry_policy.maximum_delay must be an integer between 0 and 3600"),
    ({"options": {"_retry_policy": {"retries_with_no_delay": 1000000000}}},
     "options._retry_policy.retries_with_no_delay must be between 0 and 100"),
    ({"options": {"_retry_policy": {"minimum_delay": 60}}},
     "minimum_delay (60) is above maximum_delay (30)"),
    ({"options": {"_retry_policy": "fast"}}, "options._retry_policy must be an object"),
]


@pytest.mark.parametrize(("document", "fragment"), UNSENDABLE)
def test_create_refuses_what_the_notifier_could_never_send(api, document, fragment):
    assert_error(subscribe(api, **document), 400, fragment)
    assert api.get(BASE).json["subscriptions"] == []


@pytest.mark.parametrize(("document", "fragment"), UNSENDABLE)
def test_update_refuses_what_the_notifier_could_never_send(api, document, fragment):
    sid = created_id(subscribe(api))
    assert_error(api.patch(f"{BASE}/{sid}", json=document), 400, fragment)
    got = api.get(f"{BASE}/{sid}").json
    assert (got["subscriber"], got["options"]) == (HOOK, {})


def test_bounded_retry_policies_and_sendable_headers_are_taken(api):
    options = {"post_headers": {"X-Token": "abc 123\tok"},
               "_retry_policy": {"retries_with_no_delay": 100, "minimum_delay": 0,
                                 "maximum_delay": 3600, "maximum_delay_retries": 0,
                                 "retry_backoff_function": "geometric",
                                 "ignore_subscription_override": False}}
    sid = created_id(subscribe(api, subscriber="http://example.com/caf%C3%A9?x=%20",
                               options=options))
    assert api.get(f"{BASE}/{sid}").json["options"] == options


@pytest.mark.parametrize(("policy", "fragment"), [
    ({"maximum_delay": 20000000.0}, "_retry_policy.maximum_delay must be an integer"),
    ({"retries_with_no_delay": 1000000000}, "must be between 0 and 100"),
    ({"retry_backoff_function": "cubic"}, "retry_backoff_function must be one of"),
])
def test_queue_metadata_retry_policy_is_checked_too(api, policy, fragment):
    result = api.put("/v2/queues/q", json={"_retry_policy": policy})
    assert_error(result, 400, fragment)
    good = {"minimum_delay": 1, "maximum_delay": 10}
    assert api.put("/v2/queues/q", json={"_retry_policy": good}).status_code in (201, 204)
    assert api.get("/v2/queues/q").json["_retry_policy"] == good


def test_update_to_a_taken_subscriber_is_409(api):
    created_id(subscribe(api))
    other = created_id(subscribe(api, subscriber="mailto:x@y.z"))
    assert_error(api.patch(f"{BASE}/{other}", json={"subscriber": HOOK}), 409,
                 "Such subscription already exists.")


def test_delete_removes_it(api):
    sid = created_id(subscribe(api))
    assert api.delete(f"{BASE}/{sid}").status_code == 204
    assert_error(api.get(f"{BASE}/{sid}"), 404)
    assert api.get(BASE).json["subscriptions"] == []


def test_confirm_and_unconfirm(api):
    sid = created_id(subscribe(api))
    result = api.put(f"{BASE}/{sid}/confirm", json={"confirmed": True})
    assert result.status_code == 204
    assert result.headers["Location"] == f"{BASE}/{sid}/confirm"
    assert api.get(f"{BASE}/{sid}").json["confirmed"] is True
    assert api.put(f"{BASE}/{sid}/confirm", json={"confirmed": False}).status_code == 204
    assert api.get(f"{BASE}/{sid}").json["confirmed"] is False


@pytest.mark.parametrize("body", [None, {}, {"confirmed": "true"}, {"confirmed": 1}, [True]])
def test_confirm_needs_a_boolean(api, body):
    sid = created_id(subscribe(api))
    path = f"{BASE}/{sid}/confirm"
    result = api.put(path) if body is None else api.put(path, json=body)
    assert_error(result, 400, "The 'confirmed' should be boolean.")
    assert api.get(f"{BASE}/{sid}").json["confirmed"] is False


def test_expired_subscription_is_gone(api, clock):
    sid = created_id(subscribe(api, ttl=60))
    clock.advance(60)
    assert_error(api.get(f"{BASE}/{sid}"), 404)
    assert api.get(BASE).json["subscriptions"] == []
    assert created_id(subscribe(api)) != sid


def test_projects_are_isolated(api, app, project):
    sid = created_id(subscribe(api))
    other = Api(app, project + "-other")
    assert_error(other.get(f"{BASE}/{sid}"), 404)
    assert other.get(BASE).json["subscriptions"] == []
    assert other.delete(f"{BASE}/{sid}").status_code == 204
    assert_error(other.patch(f"{BASE}/{sid}", json={"ttl": 100}), 404)
    assert_error(other.put(f"{BASE}/{sid}/confirm", json={"confirmed": True}), 404)
    got = api.get(f"{BASE}/{sid}").json
    assert (got["ttl"], got["confirmed"]) == (3600, False)
    # The same subscriber in the other project is its own subscription.
    assert created_id(subscribe(other)) != sid


def test_subscriptions_are_per_queue(api):
    sid = created_id(subscribe(api, queue="a"))
    assert_error(api.get(f"/v2/queues/b/subscriptions/{sid}"), 404)
    assert api.get("/v2/queues/b/subscriptions").json["subscriptions"] == []
    assert created_id(subscribe(api, queue="b")) != sid


def test_purge_subscriptions_removes_them_and_keeps_messages(api):
    sid = created_id(subscribe(api))
    [mid] = api.post_messages("q", {"body": 1})
    result = api.post("/v2/queues/q/purge", json={"resource_types": ["subscriptions"]})
    assert result.status_code == 204
    assert_error(api.get(f"{BASE}/{sid}"), 404)
    assert api.get(f"/v2/queues/q/messages/{mid}").status_code == 200


def test_purge_messages_keeps_subscriptions(api):
    sid = created_id(subscribe(api))
    api.post("/v2/queues/q/purge", json={"resource_types": ["messages"]})
    assert api.get(f"{BASE}/{sid}").status_code == 200
    api.post("/v2/queues/q/purge")  # both by default
    assert_error(api.get(f"{BASE}/{sid}"), 404)


def test_home_document_names_zaqar_subscription_relations(api):
    resources = api.get("/v2").json["resources"]
    assert resources["rel/subscriptions_get"]["href-template"] == (
        "/v2/queues/{queue_name}/subscriptions{?marker,limit}")
    assert resources["rel/subscriptions_post"]["hints"]["allow"] == ["POST"]
    assert resources["rel/subscription"]["hints"]["allow"] == ["GET", "DELETE"]
    assert resources["rel/subscription_patch"]["href-template"] == (
        "/v2/queues/{queue_name}/subscriptions/{subscriptions_id}")


class Recorder:
    def __init__(self):
        self.calls = []

    def request(self, subscription, *, unsubscribed):
        self.calls.append((subscription.id, subscription.confirmed, unsubscribed))


def test_confirmation_requests_follow_zaqar_with_require_confirmation(storage, clock, project):
    from zq.config import Limits
    from zq.pooling import SingleBackend
    from zq.subscriptions import SubscriptionService

    sent = Recorder()
    service = SubscriptionService(Limits(), SingleBackend(storage), require_confirmation=True,
                                  confirmations=sent)
    sid, created = service.create(project, "q", {"subscriber": HOOK})
    assert created
    again, created = service.create(project, "q", {"subscriber": HOOK})
    assert (again, created) == (sid, False)
    service.confirm(project, "q", sid, {"confirmed": True})
    service.confirm(project, "q", sid, {"confirmed": False})
    assert sent.calls == [(sid, False, False), (sid, False, False), (sid, False, True)]
    quiet = Recorder()
    off = SubscriptionService(Limits(), SingleBackend(storage), confirmations=quiet)
    off.create(project, "r", {"subscriber": HOOK})
    assert quiet.calls == []
