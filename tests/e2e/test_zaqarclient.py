"""python-zaqarclient, unchanged, against a real ``zq serve`` process."""

from __future__ import annotations

import uuid

import httpx
import pytest
from zaqarclient.queues.client import Client
from zaqarclient.queues.v2 import client as v2
from zaqarclient.queues.v2 import core
from zaqarclient.transport import errors as client_errors

from tests.e2e.server import ServerProcess

pytestmark = pytest.mark.slow


def connect(server: ServerProcess, project: str) -> Client:
    conf = {"auth_opts": {"backend": "noauth", "options": {"os_project_id": project}}}
    return Client(server.url, version=2, conf=conf)


class AdminClient(v2.Client):
    """python-zaqarclient with ``X-Roles: admin`` on every request.

    The client has no option for roles: under ``[auth] strategy = "none"``
    zq (like Zaqar behind no Keystone) trusts X-Roles as sent, so an admin
    script adds the header, here as a gateway would (docs/compatibility.md).
    """

    def _request_and_transport(self):  # type: ignore[no-untyped-def]
        request, transport = super()._request_and_transport()
        request.headers["X-Roles"] = "admin"
        return request, transport


def connect_admin(server: ServerProcess, project: str) -> AdminClient:
    conf = {"auth_opts": {"backend": "noauth", "options": {"os_project_id": project}}}
    return AdminClient(server.url, version=2, conf=conf)


def messages_with_history(client: Client, queue: str) -> list[dict]:
    """The queue's messages as the server sent them, with zq's opt-in history.

    zaqarclient's Message objects accept no unknown key, so zq shows the dead
    letter history only on request (``include_history=true``); the client's
    core API passes the parameter through and returns the raw JSON.
    """
    request, transport = client._request_and_transport()
    listed = core.message_list(transport, request, queue, echo=True, include_history=True)
    return listed["messages"] if listed else []


def create_queue(client: Client, name: str, metadata: dict) -> None:
    """PUT the queue with its metadata in the body (zaqarclient's core API)."""
    request, transport = client._request_and_transport()
    core.queue_create(transport, request, name, metadata=metadata)


def queue_names(client: Client) -> list[str]:
    listed, _count = client.queues()
    return [queue.name for queue in listed]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_queue_metadata_round_trip(server: ServerProcess, project: str) -> None:
    client = connect(server, project)
    name, dlq = unique("orders"), unique("orders-dlq")
    create_queue(client, name, {
        "_max_claim_count": 3, "_dead_letter_queue": dlq,
        "_dead_letter_queue_messages_ttl": 7200, "owner": "billing",
    })
    queue = client.queue(name, auto_create=False)
    shown = queue.metadata(force_reload=True)
    assert shown["_max_claim_count"] == 3
    assert shown["_dead_letter_queue"] == dlq
    assert shown["_dead_letter_queue_messages_ttl"] == 7200
    assert shown["_default_message_ttl"] == 3600  # unset reserved keys show defaults
    assert shown["owner"] == "billing"

    # The client's metadata update (a JSON patch) replaces set keys.
    updated = queue.metadata(new_meta={**shown, "_max_claim_count": 5, "owner": "ops"})
    assert updated["_max_claim_count"] == 5 and updated["owner"] == "ops"
    assert queue.metadata(force_reload=True)["_dead_letter_queue"] == dlq
    assert name in queue_names(client)


def test_post_list_claim_renew_delete_release(server: ServerProcess, project: str) -> None:
    client = connect(server, project)
    queue = client.queue(unique("work"), force_create=True)
    posted = queue.post([{"body": {"n": n}, "ttl": 600} for n in range(3)])
    assert len(posted["resources"]) == 3

    listed = list(queue.messages(echo=True))
    assert [m.body for m in listed] == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert all(m.claim_count == 0 for m in listed)

    claim = queue.claim(ttl=120, grace=60, limit=2)
    held = list(claim)
    assert [m.body for m in held] == [{"n": 0}, {"n": 1}]
    assert all(m.claim_count == 1 and m.claim_id == claim.id for m in held)
    assert queue.stats["messages"]["claimed"] == 2

    claim.update(ttl=300, grace=60)
    assert claim.ttl == 300

    held[0].delete()  # the message carries its claim id: a delete with claim
    assert [m.body for m in queue.messages(echo=True, include_claimed=True)] == [
        {"n": 1}, {"n": 2}]

    claim.delete()  # release: the rest of the claim is free again
    stats = queue.stats["messages"]
    assert (stats["free"], stats["claimed"], stats["total"]) == (2, 0, 2)
    again = list(queue.claim(ttl=60, grace=60, limit=5))
    assert [(m.body, m.claim_count) for m in again] == [({"n": 1}, 2), ({"n": 2}, 1)]


def test_delete_messages_by_id_and_pop(server: ServerProcess, project: str) -> None:
    client = connect(server, project)
    queue = client.queue(unique("bulk"), force_create=True)
    ids = [href.rsplit("/", 1)[1] for href in
           queue.post([{"body": n, "ttl": 600} for n in range(4)])["resources"]]
    queue.delete_messages(*ids[:2])
    popped = queue.pop(count=1)
    assert [m.body for m in popped] == [2]
    assert [m.id for m in queue.messages(echo=True)] == [ids[3]]


def test_dead_letter_flow(server: ServerProcess, project: str) -> None:
    client = connect(server, project)
    name, dlq_name = unique("jobs"), unique("jobs-dlq")
    queue = client.queue(name, force_create=True)
    # The client's own metadata update: a JSON patch computed from GET.
    queue.metadata(new_meta={"_max_claim_count": 2, "_dead_letter_queue": dlq_name})
    assert queue.metadata(force_reload=True)["_max_claim_count"] == 2
    message_id = queue.post({"body": {"job": "resize"}, "ttl": 600})["resources"][0]
    message_id = message_id.rsplit("/", 1)[1]

    for delivery in (1, 2):
        claim = queue.claim(ttl=60, grace=60, limit=1)
        (held,) = list(claim)
        assert (held.id, held.claim_count) == (message_id, delivery)
        claim.delete()  # the consumer gives up: release

    assert list(queue.claim(ttl=60, grace=60, limit=1)) == []  # moved, not delivered
    assert queue.stats["messages"]["total"] == 0
    assert list(queue.messages(echo=True, include_claimed=True)) == []

    (moved,) = messages_with_history(client, dlq_name)
    assert moved["id"] == message_id
    assert moved["body"] == {"job": "resize"}
    assert moved["claim_count"] == 2
    (entry,) = moved["history"]
    assert (entry["queue"], entry["reason"], entry["count"]) == (name, "max_claim_count", 1)
    assert entry["first_time"] == entry["last_time"]

    # An unchanged client reads its dead letter queue (no history by default).
    dlq = client.queue(dlq_name, auto_create=False)
    assert [(m.id, m.claim_count) for m in dlq.messages(echo=True)] == [(message_id, 2)]
    assert dlq.message(message_id).body == {"job": "resize"}
    assert dlq.stats["messages"]["free"] == 1


def test_queue_delete(server: ServerProcess, project: str) -> None:
    client = connect(server, project)
    queue = client.queue(unique("gone"), force_create=True)
    queue.post({"body": "x", "ttl": 600})
    queue.delete()
    assert queue.name not in queue_names(client)
    assert queue.stats["messages"]["total"] == 0


def test_bad_input_gets_4xx_and_the_server_keeps_serving(
    server: ServerProcess, project: str
) -> None:
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    bad_requests = [
        ("PUT", "/v2/queues/bad%20name", {}, None),
        ("POST", "/v2/queues/q/messages", {"Content-Type": "application/json"}, b"{not json"),
        ("POST", "/v2/queues/q/messages", {}, b'{"messages": [{"ttl": 1, "body": 1}]}'),
        ("POST", "/v2/queues/q/messages", {}, b'{"messages": "nope"}'),
        ("POST", "/v2/queues/q/messages", {}, b'{"messages": [{"body": "' + b"x" * 300_000
         + b'"}]}'),
        ("POST", "/v2/queues/q/claims?limit=abc", {}, b"{}"),
        ("GET", "/v2/queues/q/messages?limit=-1", {}, None),
        ("PUT", "/v2/queues/q", {}, b'{"_max_claim_count": 0}'),
        ("PUT", "/v2/queues/q", {}, b'{"_dead_letter_queue": "q", "_max_claim_count": 1}'),
        ("GET", "/v2/queues", {"Client-ID": "not-a-uuid"}, None),
    ]
    with httpx.Client(base_url=server.url, trust_env=False, timeout=30) as http:
        for method, path, extra, body in bad_requests:
            response = http.request(method, path, headers={**headers, **extra}, content=body)
            assert 400 <= response.status_code < 500, (method, path, response.status_code)
            error = response.json()
            assert error["title"] and error["description"], (method, path, error)
        assert http.get("/v2/ping", headers=headers).status_code == 204

    client = connect(server, project)
    with pytest.raises(client_errors.MalformedRequest):
        client.queue(unique("ttl"), force_create=True).post({"body": 1, "ttl": 5})
    queue = client.queue(unique("after"), force_create=True)
    queue.post({"body": "still serving", "ttl": 600})
    assert [m.body for m in queue.messages(echo=True)] == ["still serving"]


def test_a_fetched_claimed_message_deletes_with_its_claim(
    server: ServerProcess, project: str
) -> None:
    # zaqarclient/queues/v2/message.py takes claim_id from the href; Zaqar's
    # reads (v2_0/messages.py) put ?claim_id= in it for a claimed message.
    client = connect(server, project)
    queue = client.queue(unique("held"), force_create=True)
    ids = [href.rsplit("/", 1)[1] for href in
           queue.post([{"body": n, "ttl": 600} for n in range(4)])["resources"]]
    claim = queue.claim(ttl=300, grace=60, limit=3)
    assert [m.id for m in claim] == ids[:3]

    by_id = queue.message(ids[0])
    by_ids = {m.id: m for m in queue.messages(ids[1], ids[3])}
    listed = {m.id: m for m in client.queue(queue.name, auto_create=False).messages(
        include_claimed=True, echo=True)}
    assert by_id.claim_id == claim.id
    assert by_ids[ids[1]].claim_id == claim.id and by_ids[ids[3]].claim_id is None
    assert [listed[i].claim_id for i in ids] == [claim.id] * 3 + [None]

    by_id.delete()
    by_ids[ids[1]].delete()
    listed[ids[2]].delete()
    by_ids[ids[3]].delete()  # free: no claim needed
    assert list(queue.messages(echo=True, include_claimed=True)) == []
    assert queue.stats["messages"]["total"] == 0


def test_every_other_queue_call_of_the_client(server: ServerProcess, project: str) -> None:
    client = connect(server, project)
    assert client.ping() is True
    home = client.homedoc()
    assert home["resources"]["rel/queue"]["href-template"] == "/v2/queues/{queue_name}"

    names = [unique("list-a"), unique("list-b"), unique("other")]
    for name in names:
        create_queue(client, name, {"team": "ops" if "list" in name else "dev"})
    listed, count = client.queues(name="list-", detailed=True, with_count=True, limit=1)
    assert count == 2
    queues = list(listed.stream())  # a stream follows the next links
    assert sorted(q.name for q in queues) == sorted(names[:2])
    assert all(q.metadata()["team"] == "ops" for q in queues)
    filtered, _ = client.queues(team="dev")
    assert [q.name for q in filtered] == [names[2]]

    queue = client.queue(names[0], auto_create=False)
    # HEAD is 405 on Zaqar v2 as on zq; the client maps no 405, so exists()
    # answers True for any queue, as it does against Zaqar (queues are lazy).
    assert queue.exists() is True
    queue.post([{"body": n, "ttl": 600} for n in range(3)])
    claim = queue.claim(ttl=120, grace=60, limit=1)
    again = queue.claim(id=claim.id)  # GET the claim
    assert [m.id for m in again] == [m.id for m in claim]
    assert again.ttl == 120
    queue.purge(resource_types=["messages"])
    assert queue.stats["messages"]["total"] == 0

    signed = queue.signed_url(paths=["messages"], ttl_seconds=600, methods=["GET", "POST"])
    assert signed["paths"] == [f"/v2/queues/{names[0]}/messages"]
    assert sorted(signed["methods"]) == ["GET", "POST"] and signed["signature"]


def test_health_through_the_client_needs_the_admin_role(
    server: ServerProcess, project: str
) -> None:
    with pytest.raises(client_errors.ForbiddenError):
        connect(server, project).health()
    admin = connect_admin(server, project)
    queue = admin.queue(unique("volume"), force_create=True)
    queue.post([{"body": 1, "ttl": 600}])
    health = admin.health()
    assert health["storage_reachable"] is True
    volume = health["message_volume"]
    assert volume["total"] == volume["free"] + volume["claimed"] >= 1


def test_subscription_calls(server: ServerProcess, project: str) -> None:
    client = connect(server, project)
    name = unique("events")
    hook = "https://example.com/hooks/" + name
    created = client.subscription(name, subscriber=hook, ttl=600, options={"k": "v"})
    assert created.id
    fetched = client.subscription(name, id=created.id)  # GET by id
    assert (fetched.subscriber, fetched.ttl, fetched.options) == (hook, 600, {"k": "v"})

    mail = client.subscription(name, subscriber="mailto:ops@example.com")
    extra = [client.subscription(name, subscriber=f"{hook}/{n}").id for n in range(3)]
    # The client's streaming iterator follows the `next` links page by page.
    assert len(list(client.subscriptions(name, limit=2))) == 2
    listed = list(client.subscriptions(name, limit=2).stream())
    assert sorted(s.id for s in listed) == sorted([created.id, mail.id, *extra])
    assert {s.queue_name for s in listed} == {name}
    shown = next(s for s in listed if s.id == created.id)
    assert (shown.subscriber, shown.ttl, shown.options) == (hook, 600, {"k": "v"})

    created.update({"ttl": 1200, "options": {"k": "w"}})
    again = client.subscription(name, id=created.id)
    assert (again.ttl, again.options) == (1200, {"k": "w"})

    # A repeated create of an unconfirmed subscription gets its id, as from Zaqar.
    assert client.subscription(name, subscriber=hook).id == created.id

    created.delete()
    assert created.id not in {s.id for s in client.subscriptions(name)}
    with pytest.raises(client_errors.ResourceNotFound):
        client.subscription(name, id=created.id)
    # Another project sees none of them.
    assert list(connect(server, project + "-other").subscriptions(name)) == []
