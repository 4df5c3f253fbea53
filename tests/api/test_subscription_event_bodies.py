"""The app wires one cache of subscribed queues into posts and subscriptions.

A subscription made over HTTP puts the next post's body into its posted
event at once (the same process), and its deletion takes it out at once.
"""

from __future__ import annotations

from tests.api.helpers import Api
from zq import events
from zq.storage.base import Storage


def posted_detail(storage: Storage, api: Api, message_id: str) -> dict:
    found = [e for e in storage.events.read(limit=100_000)
             if e.project == api.project and e.message_id == message_id
             and e.kind == events.POSTED]
    assert len(found) == 1
    return found[0].detail


def test_subscribing_over_http_puts_bodies_into_posted_events_at_once(
        api: Api, storage: Storage) -> None:
    (plain,) = api.post_messages("bodies", {"body": {"n": 1}})  # caches "no subscription"
    created = api.post("/v2/queues/bodies/subscriptions",
                       json={"subscriber": "http://example.com/hook"})
    assert created.status_code == 201, created.text
    (subscribed,) = api.post_messages("bodies", {"body": {"n": 2}})
    assert api.delete("/v2/queues/bodies/subscriptions/"
                      + created.json["subscription_id"]).status_code == 204
    (after,) = api.post_messages("bodies", {"body": {"n": 3}})
    assert events.BODY not in posted_detail(storage, api, plain)
    assert posted_detail(storage, api, subscribed)[events.BODY] == '{"n":2}'
    assert events.BODY not in posted_detail(storage, api, after)
