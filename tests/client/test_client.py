"""zq.client.Client: each call against the real app, and its error types."""

from __future__ import annotations

import json

import httpx
import pytest

from zq.client import (
    BadRequest,
    Client,
    Conflict,
    Forbidden,
    Message,
    NotFound,
    QueueExists,
    RedriveResult,
    Suspected,
    TransportError,
    Unavailable,
)


def test_queues(client):
    assert client.create_queue("q", {"color": "red"}) is True
    assert client.create_queue("q") is False
    assert client.queue_metadata("q")["color"] == "red"
    shown = client.set_metadata("q", {"_max_claim_count": 3}, remove=["color"])
    assert shown["_max_claim_count"] == 3 and "color" not in shown
    assert [q["name"] for q in client.list_queues()] == ["q"]
    client.delete_queue("q")
    assert client.list_queues() == []


def test_create_queue_never_keeps_other_metadata_silently(client):
    # The server answers 204 and keeps what it has (Zaqar's PUT); the client
    # must not let the new values be lost without a word.
    client.create_queue("q", {"_max_claim_count": 2, "_dead_letter_queue": "dlq",
                              "color": "red"})
    with pytest.raises(QueueExists) as exists:
        client.create_queue("q", {"_max_claim_count": 5, "_retry_delay": 5, "color": "red"})
    assert exists.value.differences == {"_max_claim_count": (2, 5), "_retry_delay": (None, 5)}
    assert "queue q already exists with other metadata: _max_claim_count is 2, not 5" in str(
        exists.value)
    assert client.queue_metadata("q")["_max_claim_count"] == 2  # nothing written
    # The same values again: nothing to say.
    assert client.create_queue("q", {"_max_claim_count": 2, "color": "red"}) is False
    # update: the given keys are set, the others stay.
    assert client.create_queue("q", {"_max_claim_count": 5, "_retry_delay": 5},
                               update=True) is False
    shown = client.queue_metadata("q")
    assert (shown["_max_claim_count"], shown["_retry_delay"], shown["_dead_letter_queue"],
            shown["color"]) == (5, 5, "dlq", "red")
    assert client.create_queue("new", {"_retry_delay": 5}, update=True) is True


def test_messages_claims_and_stats(client, other, clock):
    ids = client.post("q", {"n": 1}, {"n": 2}, {"n": 3}, ttl=600)
    assert [m.body for m in client.get_messages("q", ids)] == [{"n": 1}, {"n": 2}, {"n": 3}]
    # The ones that are there; none there is no error (the API's 404).
    assert [m.id for m in client.get_messages("q", [ids[0], "f" * 24])] == [ids[0]]
    assert client.get_messages("elsewhere", ids) == []
    assert client.get_message("q", ids[0]).ttl == 600
    # echo: a client's own messages are hidden only when asked.
    assert other.list_messages("q", echo=False)[0].id == ids[0]
    claim = client.claim("q", limit=2, ttl=60, grace=60)
    assert [m.id for m in claim.messages] == ids[:2]
    assert {m.claim_id for m in claim.messages} == {claim.id}
    assert claim.messages[0].claim_count == 1
    assert client.stats("q").claimed == 2
    client.renew("q", claim.id, ttl=120)
    assert [m.id for m in client.get_claim("q", claim.id).messages] == ids[:2]
    client.delete_message("q", ids[0], claim_id=claim.id)
    client.release("q", claim.id)
    stats = client.stats("q")
    assert (stats.free, stats.claimed, stats.total) == (2, 0, 2)
    assert [m.id for m in client.pop("q", 1)] == [ids[1]]
    client.delete_messages("q", [ids[2]])
    assert client.stats("q").total == 0
    assert client.claim("q") is None


def test_errors_carry_the_servers_title_and_description(client):
    client.post("q", "x")
    claim = client.claim("q", limit=1)
    with pytest.raises(Forbidden) as forbidden:
        client.delete_message("q", claim.messages[0].id)
    assert forbidden.value.status == 403
    assert "claim" in forbidden.value.description
    assert forbidden.value.title
    with pytest.raises(NotFound):
        client.get_message("q", "0" * 32)
    with pytest.raises(BadRequest) as bad:
        client.post("q", "x", ttl=1)
    assert "ttl" in bad.value.description
    with pytest.raises(Conflict) as conflict:  # no dead letter queue for a terminal reject
        client.reject("q", claim.messages[0].id, claim.id, description="boom")
    assert "_dead_letter_queue" in conflict.value.description


def test_reject_terminal_and_retry(client):
    client.create_queue("q", {"_dead_letter_queue": "dlq"})
    first, second = client.post("q", "a", "b", ttl=600)
    claim = client.claim("q", limit=2)
    client.reject("q", first, claim.id, description="KeyError: 'order_id'")
    client.reject("q", second, claim.id, description="flaky", retry_after=0)
    [dead] = client.list_messages("dlq", include_history=True)
    assert dead.id == first
    assert dead.history[-1]["description"] == "KeyError: 'order_id'"
    assert [m.id for m in client.claim("q").messages] == [second]


def test_consumers_and_suspected(client, clock):
    client.create_queue("q", {"_suspect_lapsed_consumers": True})
    client.post("q", "a", "b", ttl=3600)
    lapsed = client.claim("q", limit=1, ttl=60)
    clock.advance(61)
    with pytest.raises(Suspected) as suspected:
        client.claim("q")
    assert suspected.value.lapsed_claim_id == lapsed.id
    [me] = client.consumers("q")
    assert (me.client_id, me.lapsed_claims, me.suspected) == (client.client_id, 1, True)
    client.release("q", lapsed.id)
    assert client.claim("q") is not None


def redrive_transport(seen: list[dict]) -> httpx.MockTransport:
    """A stand-in for POST /v2/queues/{dlq}/redrive as API.md describes it."""
    pages = [{"matched": 2, "moved": 2, "to": {"orders": 2}, "next": "m2"},
             {"matched": 1, "moved": 1, "to": {"orders": 1}, "next": None}]

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v2/queues/dlq/redrive"
        assert request.headers["X-Project-ID"] == "p"
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=pages[min(len(seen), 2) - 1])
    return httpx.MockTransport(answer)


def test_redrive_sends_the_api_body_and_reads_the_answer():
    seen: list[dict] = []
    client = Client("http://zq.test", project="p", transport=redrive_transport(seen))
    result = client.redrive("dlq", to="orders", filter={"reason": "rejected"}, limit=2,
                            dry_run=True)
    assert result == RedriveResult(matched=2, moved=2, to={"orders": 2}, next="m2")
    assert seen == [{"to": "orders", "filter": {"reason": "rejected"}, "limit": 2,
                     "dry_run": True}]
    seen.clear()
    assert client.redrive_all("dlq") == RedriveResult(matched=3, moved=3, to={"orders": 3},
                                                      next=None)
    assert seen == [{}, {"marker": "m2"}]


def test_redrive_against_the_server(client):
    client.create_queue("orders", {"_dead_letter_queue": "orders-dlq"})
    ids = client.post("orders", {"n": 1}, {"n": 2}, {"n": 3}, ttl=3600)
    claim = client.claim("orders", limit=3)
    for message_id in ids:
        client.reject("orders", message_id, claim.id, description=f"bad {message_id}")
    dry = client.redrive("orders-dlq", dry_run=True)
    assert (dry.matched, dry.moved, dry.to) == (3, 0, {"orders": 3})
    one = client.redrive("orders-dlq", filter={"ids": [ids[0]]})
    assert (one.matched, one.moved, one.to) == (1, 1, {"orders": 1})
    rest = client.redrive_all("orders-dlq", filter={"reason": "rejected"}, limit=1)
    assert (rest.matched, rest.moved, rest.to, rest.next) == (2, 2, {"orders": 2}, None)
    back = client.list_messages("orders", include_history=True)
    assert sorted(m.id for m in back) == sorted(ids)
    assert {m.redrive_count for m in back} == {1}
    assert client.stats("orders-dlq").total == 0


def test_redrive_to_a_new_queue_needs_create_and_says_what_it_made(client):
    client.create_queue("orders", {"_dead_letter_queue": "orders-dlq"})
    ids = client.post("orders", {"n": 1}, {"n": 2}, ttl=3600)
    claim = client.claim("orders", limit=2)
    for message_id in ids:
        client.reject("orders", message_id, claim.id, description="bad")
    with pytest.raises(NotFound):
        client.redrive("orders-dlq", to="orders-retry")
    assert client.stats("orders-dlq").total == 2  # nothing moved
    made = client.redrive_all("orders-dlq", to="orders-retry", limit=1, create=True)
    assert (made.moved, made.to, made.created) == (2, {"orders-retry": 2}, ("orders-retry",))
    assert sorted(m.id for m in client.list_messages("orders-retry")) == sorted(ids)


def test_server_and_transport_failures_have_their_own_types():
    def unavailable(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"title": "Service Unavailable",
                                         "description": "The storage backend is unreachable."})
    client = Client("http://zq.test/v2", project="p",
                    transport=httpx.MockTransport(unavailable))
    with pytest.raises(Unavailable) as down:
        client.stats("q")
    assert down.value.description == "The storage backend is unreachable."

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")
    client = Client("http://zq.test", project="p", transport=httpx.MockTransport(refused))
    with pytest.raises(TransportError) as lost:
        client.stats("q")
    assert "connection refused" in lost.value.description


def test_the_breaker_in_stats_and_forced(client):
    client.create_queue("plain")
    assert client.stats("plain").breaker is None  # off: the stats carry none
    with pytest.raises(Conflict):
        client.force_breaker("plain", "open")
    with pytest.raises(NotFound):
        client.force_breaker("ghost", "open")
    client.create_queue("guarded", {"_breaker_failure_ratio": 0.5})
    assert client.stats("guarded").breaker.state == "closed"
    client.force_breaker("guarded", "open")
    shown = client.stats("guarded").breaker
    assert shown.state == "open" and shown.since.endswith("Z") and shown.description is None
    with pytest.raises(BadRequest):
        client.force_breaker("guarded", "half-open")
    client.force_breaker("guarded", "closed")
    assert client.stats("guarded").breaker.state == "closed"


# A breaker that counts failures but does not trip on this test's few rejects.
QUIET_BREAKER = {"_breaker_failure_ratio": 0.5, "_breaker_min_failures": 10}


def test_a_rejected_message_shows_its_last_failure(client, clock):
    client.create_queue("q", {**QUIET_BREAKER, "_dead_letter_queue": "dlq"})
    first, second = client.post("q", "a", "b", ttl=3600)
    claim = client.claim("q", limit=2)
    client.reject("q", first, claim.id, description="KeyError: 'order_id'")
    client.reject("q", second, claim.id, description="TimeoutError: pricing", retry_after=0)
    [dead] = client.list_messages("dlq", include_history=True)
    assert (dead.id, dead.last_failure, dead.forgiven_count) == (
        first, "KeyError: 'order_id'", 0)  # the move kept it; nothing forgiven
    assert client.get_message("q", second, include_history=True).last_failure == (
        "TimeoutError: pricing")
    # Opt-in, as history: python-zaqarclient refuses keys it does not know.
    assert client.get_message("q", second).last_failure is None
    # A lapse is a failure without a description: it clears the last one.
    client.claim("q", ttl=60)
    clock.advance(61)
    [again] = client.claim("q", include_history=True).messages
    assert (again.id, again.claim_count, again.last_failure) == (second, 3, None)


def test_a_failure_while_the_breaker_is_open_is_forgiven(client):
    client.create_queue("q", {**QUIET_BREAKER, "_dead_letter_queue": "dlq",
                              "_max_claim_count": 1})
    [message_id] = client.post("q", "a", ttl=3600)
    claim = client.claim("q")
    client.force_breaker("q", "open")
    # Held as a retry: not charged, so its one delivery is not used up.
    client.reject("q", message_id, claim.id, description="OperationalError: db down")
    shown = client.get_message("q", message_id, include_history=True)
    assert (shown.claim_count, shown.forgiven_count, shown.last_failure) == (
        1, 1, "OperationalError: db down")
    client.force_breaker("q", "closed")
    [delivered] = client.claim("q", include_history=True).messages
    assert (delivered.id, delivered.claim_count, delivered.forgiven_count) == (
        message_id, 2, 1)
    assert [m.forgiven_count for m in client.get_messages("q", [message_id],
                                                          include_history=True)] == [1]


def test_a_message_without_zqs_history_fields_keeps_their_defaults():
    # As Zaqar, a zq before these fields, or a request without
    # include_history shows a message.
    shown = Message.from_json({"id": "m1", "href": "/v2/queues/q/messages/m1", "ttl": 60,
                               "age": 2, "body": {"n": 1}})
    assert (shown.claim_count, shown.history, shown.redrive_count, shown.forgiven_count,
            shown.last_failure) == (0, None, None, 0, None)


def test_a_popped_message_shows_its_history_when_asked(client):
    client.create_queue("q", {**QUIET_BREAKER, "_dead_letter_queue": "dlq"})
    first, second = client.post("q", "a", "b", ttl=3600)
    claim = client.claim("q", limit=2)
    client.reject("q", first, claim.id, description="KeyError: 'order_id'")
    client.reject("q", second, claim.id, description="KeyError: 'sku'")
    assert client.redrive_all("dlq").moved == 2
    # Opt-in, as on every other read: a pop without it shows none of them.
    [plain] = client.pop("q")
    assert (plain.id, plain.history, plain.redrive_count, plain.last_failure) == (
        first, None, None, None)
    [popped] = client.pop("q", include_history=True)
    assert (popped.id, popped.claim_count, popped.redrive_count, popped.last_failure) == (
        second, 1, 1, "KeyError: 'sku'")  # the redrive reset claim_count, kept last_failure
    assert [h["reason"] for h in popped.history] == ["rejected", "redriven"]
    assert popped.history[0]["description"] == "KeyError: 'sku'"


def test_a_claims_messages_show_their_history_when_asked(client):
    client.create_queue("q", {**QUIET_BREAKER, "_dead_letter_queue": "dlq"})
    held, dead = client.post("q", "a", "b", ttl=3600)
    claim = client.claim("q", limit=2)
    client.force_breaker("q", "open")
    client.reject("q", held, claim.id, description="OperationalError: db down")  # forgiven
    client.force_breaker("q", "closed")
    client.reject("q", dead, claim.id, description="KeyError: 'order_id'")
    again = client.claim("q")
    [plain] = client.get_claim("q", again.id).messages
    assert (plain.id, plain.forgiven_count, plain.last_failure, plain.redrive_count) == (
        held, 0, None, None)
    [shown] = client.get_claim("q", again.id, include_history=True).messages
    assert (shown.id, shown.claim_id, shown.claim_count, shown.forgiven_count,
            shown.last_failure, shown.redrive_count) == (
        held, again.id, 2, 1, "OperationalError: db down", 0)
    in_dlq = client.claim("dlq")
    [moved] = client.get_claim("dlq", in_dlq.id, include_history=True).messages
    assert (moved.id, moved.last_failure) == (dead, "KeyError: 'order_id'")
    assert [(h["queue"], h["reason"], h["description"]) for h in moved.history] == [
        ("q", "rejected", "KeyError: 'order_id'")]
