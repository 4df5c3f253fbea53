"""Confirmation requests (require_confirmation) on every driver's own subscriptions."""

from __future__ import annotations

import json
import uuid

import falcon.testing

from tests.notifications.helpers import Counts, config, drain, receiver
from zq.api.app import create_app
from zq.auth import signed_urls
from zq.clock import ManualClock
from zq.config import Config, NotificationsConfig, SignedUrlsConfig
from zq.events import fingerprint
from zq.notifications.confirmation_requests import SENT, key
from zq.notifications.pump import fetcher
from zq.notifications.runner import Notifier
from zq.storage.base import NewMessage, Storage

KEY = "confirmation-test-key"


def post(storage: Storage, project: str, queue: str, *bodies: object) -> None:
    storage.messages.post(project, queue, [
        NewMessage(body=json.dumps(b), ttl=300, delay=0, fingerprint=fingerprint(json.dumps(b)))
        for b in bodies], client_id=None)


def make(storage: Storage, clock: ManualClock, settings: NotificationsConfig,
         owner: str = "server-a", secret_key: str = KEY) -> Notifier:
    return Notifier(lambda: {"default": storage}, settings, clock,
                    fetch_for=lambda s: fetcher(s, None), report=Counts(), owner=owner,
                    signed_urls=SignedUrlsConfig(secret_key=secret_key))


def signed_headers(message: dict) -> dict[str, str]:
    return {name: message[name] for name in (*signed_urls.HEADERS, "X-Project-ID")}


def test_a_subscriber_confirms_with_the_signed_url_and_then_gets_posts(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        sid = storage.subscriptions.create(project, "orders", hook.url("/c"), 3600, {})
        other = storage.subscriptions.create(project, "orders", hook.url("/d"), 3600, {})
        storage.subscriptions.confirm(project, "orders", other, confirmed=True)
        post(storage, project, "orders", {"n": 1})
        drain(make(storage, clock, config(hook.port, require_confirmation=True)))

        [request] = [r.json() for r in hook.on("/c")]
        path = f"/v2/queues/orders/subscriptions/{sid}/confirm"
        assert request["Message_Type"] == "SubscriptionConfirmation"
        assert request["Message"] == "You have chosen to subscribe to the queue: orders"
        assert (request["URL-Paths"], request["URL-Methods"]) == (path, "PUT")
        assert request["X-Project-ID"] == project
        assert request["SubscribeBody"] == {"confirmed": True}
        assert request["UnsubscribeBody"] == {"confirmed": False}
        assert request["queue_name"] == "orders"
        assert "WSGISubscribeURL" not in request  # no public_url configured
        # The confirmed subscriber got the post, and no confirmation request.
        assert [r.json()["body"] for r in hook.on("/d")] == [{"n": 1}]

        grant = signed_urls.verify(KEY, signed_headers(request), project, now=clock.now())
        assert grant.allows("PUT", path)
        assert not grant.allows("GET", path)
        assert not grant.allows("PUT", f"/v2/queues/orders/subscriptions/{other}/confirm")
        assert not grant.allows("PUT", f"/v2/queues/orders/subscriptions/{sid}")
        assert not grant.allows("PUT", "/v2/queues/orders/messages")
        storage.subscriptions.confirm(project, "orders", sid, confirmed=True)

        post(storage, project, "orders", {"n": 2})
        drain(make(storage, clock, config(hook.port, require_confirmation=True)))
        # The post before the confirmation was not sent; the one after was;
        # the request was not sent again (its row says sent).
        assert [r.json().get("body") for r in hook.on("/c")] == [None, {"n": 2}]
        assert storage.notification_cursors.positions()[key(sid)] == SENT


def test_the_signed_url_confirms_through_the_api(storage: Storage, clock: ManualClock,
                                                 project: str) -> None:
    """The app verifies the request's signed headers and confirms; posts follow."""
    settings = Config(signed_urls=SignedUrlsConfig(secret_key=KEY),
                      notifications=config(None, require_confirmation=True))
    client = falcon.testing.TestClient(create_app(settings, storage=storage, clock=clock))
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    with receiver() as hook:
        created = client.simulate_post("/v2/queues/q/subscriptions", headers=headers,
                                       json={"subscriber": hook.url("/c")})
        assert created.status_code == 201, created.text
        sid = created.json["subscription_id"]
        hooked = config(hook.port, require_confirmation=True)
        drain(make(storage, clock, hooked))
        [request] = [r.json() for r in hook.on("/c")]
        signed = {"Client-ID": str(uuid.uuid4()), **signed_headers(request)}
        path = request["URL-Paths"]
        assert signed["X-Project-ID"] == project
        assert client.simulate_put(path, headers=signed,
                                   json=request["SubscribeBody"]).status_code == 204
        got = client.simulate_get(f"/v2/queues/q/subscriptions/{sid}", headers=headers)
        assert got.json["confirmed"] is True
        assert client.simulate_get(f"/v2/queues/q/subscriptions/{sid}",
                                   headers=signed).status_code == 403
        client.simulate_post("/v2/queues/q/messages", headers=headers,
                             json={"messages": [{"body": {"n": 1}, "ttl": 300}]})
        drain(make(storage, clock, hooked))
        assert [r.json().get("body") for r in hook.on("/c")] == [None, {"n": 1}]
