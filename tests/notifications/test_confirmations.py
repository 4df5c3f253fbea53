"""Confirmation requests (require_confirmation) on every driver's own subscriptions."""

from __future__ import annotations

import email
import json
import uuid

import falcon.testing
import pytest

from tests.notifications.helpers import Counts, config, drain, receiver
from tests.notifications.test_sending import smtp
from zq.api.app import create_app
from zq.auth import signed_urls
from zq.clock import ManualClock
from zq.config import Config, NotificationsConfig, SignedUrlsConfig
from zq.events import fingerprint
from zq.notifications.confirmation_requests import SENT, key, mark
from zq.notifications.pump import fetcher
from zq.notifications.runner import Notifier
from zq.notifications.webhook import signature
from zq.storage.base import Storage
from zq.storage.records import NewMessage

KEY = "confirmation-test-key"
mail_server = pytest.fixture(smtp.__wrapped__, name="mail_server")  # test_sending's SMTP server


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


def test_two_servers_send_one_request_and_a_crashed_holder_is_taken_over(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        settings = config(hook.port, require_confirmation=True, lease_seconds=30)
        taken = storage.subscriptions.create(project, "q", hook.url("/taken"), 3600, {})
        free = storage.subscriptions.create(project, "q", hook.url("/free"), 3600, {})
        # A server took /taken's request and died before it wrote "sent".
        assert storage.notification_cursors.acquire(key(taken), "dead", 30) is not None
        one, two = make(storage, clock, settings, "one"), make(storage, clock, settings, "two")
        drain(one, two)
        assert len(hook.on("/free")) == 1  # once, though two servers looked
        assert hook.on("/taken") == []  # its lease still runs
        clock.advance(31)
        drain(two, one)
        assert len(hook.on("/taken")) == 1  # taken over: at least once
        assert len(hook.on("/free")) == 1
        positions = storage.notification_cursors.positions()
        assert positions[key(taken)] == positions[key(free)] == SENT


def test_without_require_confirmation_nothing_changes(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        sid = storage.subscriptions.create(project, "q", hook.url("/c"), 3600, {})
        post(storage, project, "q", {"n": 1})
        drain(make(storage, clock, config(hook.port)))
        # Unconfirmed, yet posted to (Zaqar's rule without the setting), no request.
        assert [r.json() for r in hook.on("/c")] == [
            {"body": {"n": 1}, "ttl": 300, "queue_name": "q", "Message_Type": "Notification"}]
        assert key(sid) not in storage.notification_cursors.positions()


def test_a_failing_subscriber_is_asked_again_on_the_retry_schedule(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        hook.statuses["/c"] = 503
        sid = storage.subscriptions.create(project, "q", hook.url("/c"), 3600, {
            "_retry_policy": {"retries_with_no_delay": 1, "minimum_delay_retries": 1,
                              "minimum_delay": 5, "maximum_delay": 5,
                              "maximum_delay_retries": 0}})
        notifier = make(storage, clock, config(hook.port, require_confirmation=True))
        drain(notifier)
        assert len(hook.on("/c")) == 2  # the attempt and the retry without delay
        drain(notifier)
        assert len(hook.on("/c")) == 2  # the next one waits 5 s
        hook.statuses["/c"] = 200
        clock.advance(5)
        drain(notifier)
        assert len(hook.on("/c")) == 3
        assert storage.notification_cursors.positions()[key(sid)] == SENT
        clock.advance(60)
        drain(notifier)
        assert len(hook.on("/c")) == 3


def test_retries_run_out_and_the_request_is_given_up(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        hook.statuses["/c"] = 500
        sid = storage.subscriptions.create(project, "q", hook.url("/c"), 3600, {
            "_retry_policy": {"retries_with_no_delay": 1, "minimum_delay_retries": 0,
                              "minimum_delay": 5, "maximum_delay": 5,
                              "maximum_delay_retries": 0}})
        notifier = make(storage, clock, config(hook.port, require_confirmation=True))
        drain(notifier)
        clock.advance(60)
        drain(notifier)
        assert len(hook.on("/c")) == 2
        assert storage.notification_cursors.positions()[key(sid)] == "given-up"


def test_unsubscribing_and_asking_again_send_new_messages(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        sid = storage.subscriptions.create(project, "q", hook.url("/c"), 3600,
                                           {"secret": "s3cret"})
        notifier = make(storage, clock, config(hook.port, require_confirmation=True))
        drain(notifier)
        storage.subscriptions.confirm(project, "q", sid, confirmed=False)
        mark(storage.notification_cursors, sid, unsubscribed=True)  # what PUT .../confirm does
        clock.advance(2)  # the next refresh
        drain(notifier)
        mark(storage.notification_cursors, sid, unsubscribed=False)  # a repeated create
        clock.advance(2)
        drain(notifier)
        kinds = [r.json()["Message_Type"] for r in hook.on("/c")]
        assert kinds == ["SubscriptionConfirmation", "UnsubscribeConfirmation",
                         "SubscriptionConfirmation"]
        unsubscribed = hook.on("/c")[1]
        assert unsubscribed.json()["Message"].startswith(
            "You have unsubscribed successfully to the queue: q")
        # Signed as every notification to a subscriber with a secret.
        stamp = int(unsubscribed.headers["X-Zq-Signature-Timestamp"])
        assert unsubscribed.headers["X-Zq-Signature"] == signature("s3cret", stamp,
                                                                   unsubscribed.body)


def test_without_a_signing_key_no_request_is_sent(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        sid = storage.subscriptions.create(project, "q", hook.url("/c"), 3600, {})
        drain(make(storage, clock, config(hook.port, require_confirmation=True),
                   secret_key=""))
        assert hook.on("/c") == []
        assert key(sid) not in storage.notification_cursors.positions()


def test_the_api_records_re_requests(storage: Storage, clock: ManualClock,
                                     project: str) -> None:
    """A repeated create asks again; confirmed=false records the unsubscribe notice."""
    settings = Config(signed_urls=SignedUrlsConfig(secret_key=KEY),
                      notifications=config(None, require_confirmation=True))
    client = falcon.testing.TestClient(create_app(settings, storage=storage, clock=clock))
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    document = {"subscriber": "https://example.com/hook"}
    sid = client.simulate_post("/v2/queues/q/subscriptions", headers=headers,
                               json=document).json["subscription_id"]
    cursors = storage.notification_cursors
    lease = cursors.acquire(key(sid), "notifier", 30)
    assert lease is not None and cursors.advance(key(sid), "notifier", SENT, 30)
    again = client.simulate_post("/v2/queues/q/subscriptions", headers=headers, json=document)
    assert again.json["subscription_id"] == sid
    assert key(sid) not in cursors.positions()  # due again
    put = client.simulate_put(f"/v2/queues/q/subscriptions/{sid}/confirm", headers=headers,
                              json={"confirmed": False})
    assert put.status_code == 204
    assert cursors.positions()[key(sid)] == "unsubscribe"


def test_a_live_subscriptions_row_is_kept_and_a_deleted_ones_forgotten(
        storage: Storage, clock: ManualClock, project: str) -> None:
    with receiver() as hook:
        sid = storage.subscriptions.create(project, "q", hook.url("/c"), 3600, {})
        notifier = make(storage, clock, config(hook.port, require_confirmation=True))
        drain(notifier)
        clock.advance(61)  # past FORGET_EVERY: gone subscriptions' rows are removed
        drain(notifier)
        assert len(hook.on("/c")) == 1  # not asked again: its row was kept
        assert storage.notification_cursors.positions()[key(sid)] == SENT
        storage.subscriptions.delete(project, "q", sid)
        for _ in range(2):  # found gone twice in a row
            clock.advance(61)
            drain(notifier)
        assert key(sid) not in storage.notification_cursors.positions()


def test_a_mail_subscriber_gets_the_request_as_a_mail(
        storage: Storage, clock: ManualClock, project: str, mail_server) -> None:  # type: ignore[no-untyped-def]
    port, got = mail_server
    sid = storage.subscriptions.create(project, "q", "mailto:ops@example.com", 3600, {})
    drain(make(storage, clock, NotificationsConfig(
        require_confirmation=True, smtp_host="127.0.0.1", smtp_port=port, timeout=5.0,
        settle_seconds=0.0)))
    [envelope] = got
    assert envelope.rcpt_tos == ["ops@example.com"]
    message = json.loads(email.message_from_bytes(envelope.content).get_payload(decode=True))
    assert message["Message_Type"] == "SubscriptionConfirmation"
    assert message["URL-Paths"] == f"/v2/queues/q/subscriptions/{sid}/confirm"
    assert storage.notification_cursors.positions()[key(sid)] == SENT


def test_a_post_just_after_the_confirmation_is_sent(
        storage: Storage, clock: ManualClock, project: str) -> None:
    """The notifier's copy of the subscription is up to a refresh old; the post still goes."""
    with receiver() as hook:
        sid = storage.subscriptions.create(project, "q", hook.url("/c"), 3600, {})
        notifier = make(storage, clock, config(hook.port, require_confirmation=True))
        drain(notifier)
        storage.subscriptions.confirm(project, "q", sid, confirmed=True)
        post(storage, project, "q", {"n": 1})
        drain(notifier)  # no refresh yet: the clock has not moved
        assert [r.json().get("body") for r in hook.on("/c")] == [None, {"n": 1}]
