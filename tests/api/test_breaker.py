"""The breaker over HTTP: ``breaker`` in the stats, ``POST .../breaker``, as api-ref says.

Every call goes through CheckedClient (tests/openapi_contract.py), so the
shapes and statuses are the OpenAPI document's; the behaviour is asserted
here. The state machine itself is the contract suite's
(tests/contract/test_breaker.py).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import falcon
import falcon.testing
import pytest

from tests.api.helpers import assert_error
from tests.openapi_contract import CheckedClient
from zq import events
from zq.clock import ManualClock
from zq.storage.base import Storage

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
ON = {"_breaker_failure_ratio": 0.5, "_breaker_min_failures": 2}


@pytest.fixture(autouse=True)
def driver_runs_a_breaker(storage: Storage) -> None:
    if not storage.has_breaker:
        pytest.skip("this driver runs no breaker yet (Storage.has_breaker)")


@pytest.fixture
def client(app: falcon.App, project: str) -> CheckedClient:
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    return CheckedClient(falcon.testing.TestClient(app), headers=headers)


def stats(client: CheckedClient, queue: str) -> dict[str, Any]:
    result = client.get(f"/v2/queues/{queue}/stats")
    assert result.status_code == 200, result.text
    return result.json


def force(client: CheckedClient, queue: str, body: Any, **kwargs: Any) -> falcon.testing.Result:
    return client.post(f"/v2/queues/{queue}/breaker", json=body, **kwargs)


def breaker_events(storage: Storage, project: str, queue: str) -> list[dict[str, Any]]:
    """The queue's breaker events (the session's database is shared by every test)."""
    found, after = [], None
    while page := storage.events.read(after=after, limit=1000):
        found += [e.detail for e in page
                  if (e.kind, e.project, e.queue) == (events.BREAKER, project, queue)]
        after = page[-1].cursor
    return found


def test_stats_carry_no_breaker_unless_it_is_on(client: CheckedClient) -> None:
    assert client.put("/v2/queues/plain", json={"_max_claim_count": 3}).status_code == 201
    assert "breaker" not in stats(client, "plain")
    assert "breaker" not in stats(client, "never-created")
    # The other breaker keys alone do not turn it on.
    assert client.put("/v2/queues/half", json={"_breaker_window": 30}).status_code == 201
    assert "breaker" not in stats(client, "half")


def test_a_breaker_that_never_moved_is_closed_with_no_description(
        client: CheckedClient) -> None:
    assert client.put("/v2/queues/guarded", json=ON).status_code == 201
    breaker = stats(client, "guarded")["breaker"]
    assert set(breaker) == {"state", "since", "description"}
    assert breaker["state"] == "closed" and breaker["description"] is None
    assert ISO.fullmatch(breaker["since"]), breaker


def test_forcing_open_then_closed_shows_in_stats_with_forced_events(
        client: CheckedClient, storage: Storage, clock: ManualClock,
        project: str) -> None:
    assert client.put("/v2/queues/guarded", json=ON).status_code == 201
    result = force(client, "guarded", {"state": "open"})
    assert result.status_code == 204, result.text
    opened = stats(client, "guarded")["breaker"]
    assert opened["state"] == "open" and ISO.fullmatch(opened["since"])
    clock.advance(90)
    assert force(client, "guarded", {"state": "closed"}).status_code == 204
    closed = stats(client, "guarded")["breaker"]
    assert closed["state"] == "closed" and closed["since"] > opened["since"]
    assert [(d["previous"], d["state"], d["forced"]) for d in
            breaker_events(storage, project, "guarded")] == [("closed", "open", True),
                                                    ("open", "closed", True)]


def test_forcing_the_state_it_is_in_changes_nothing(
        client: CheckedClient, storage: Storage, project: str) -> None:
    assert client.put("/v2/queues/guarded", json=ON).status_code == 201
    before = stats(client, "guarded")["breaker"]
    assert force(client, "guarded", {"state": "closed"}).status_code == 204
    assert stats(client, "guarded")["breaker"] == before
    assert breaker_events(storage, project, "guarded") == []


def test_a_trip_by_rejects_shows_the_shared_description(client: CheckedClient) -> None:
    assert client.put("/v2/queues/outage", json=ON).status_code == 201
    posted = client.post("/v2/queues/outage/messages",
                         json={"messages": [{"body": n} for n in range(3)]})
    assert posted.status_code == 201
    claimed = client.post("/v2/queues/outage/claims", params={"limit": 3},
                          json={"ttl": 60, "grace": 60})
    assert claimed.status_code == 201
    claim_id = claimed.headers["location"].rsplit("/", 1)[1]
    for message in claimed.json["messages"][:2]:
        rejected = client.post(f"/v2/queues/outage/messages/{message['id']}/reject",
                               params={"claim_id": claim_id},
                               json={"description": "db down", "retry_after": 0})
        assert rejected.status_code == 204, rejected.text
    breaker = stats(client, "outage")["breaker"]
    assert breaker["state"] == "open" and breaker["description"] == "db down"


@pytest.mark.parametrize(("body", "fragment"), [
    (None, "required"),
    ([], "JSON object"),
    ({}, '"state"'),
    ({"state": "half-open"}, "state must be one of 'open', 'closed'"),
    ({"state": True}, "state must be one of"),
    ({"state": "open", "why": "db"}, "'why'"),
])
def test_a_bad_body_is_400_and_changes_nothing(
        client: CheckedClient, storage: Storage, project: str, body: Any,
        fragment: str) -> None:
    assert client.put("/v2/queues/guarded", json=ON).status_code == 201
    result = force(client, "guarded", body, request_valid=False)
    assert_error(result, 400, fragment)
    assert stats(client, "guarded")["breaker"]["state"] == "closed"
    assert breaker_events(storage, project, "guarded") == []


def test_a_body_that_is_not_json_is_400(client: CheckedClient) -> None:
    assert client.put("/v2/queues/guarded", json=ON).status_code == 201
    result = client.post("/v2/queues/guarded/breaker", body="open",
                         headers={"Content-Type": "application/json"}, request_valid=False)
    assert_error(result, 400, "not valid JSON")


def test_a_missing_queue_is_404_and_is_not_created(client: CheckedClient) -> None:
    assert_error(force(client, "ghost", {"state": "open"}), 404, "'ghost'")
    assert client.get("/v2/queues?name=ghost").json["queues"] == []


def test_a_queue_whose_breaker_is_off_is_409(client: CheckedClient, storage: Storage,
                                             project: str) -> None:
    assert client.put("/v2/queues/plain").status_code == 201
    assert_error(force(client, "plain", {"state": "open"}), 409, "_breaker_failure_ratio")
    assert "breaker" not in stats(client, "plain")
    assert breaker_events(storage, project, "plain") == []


def test_a_bad_queue_name_is_400(client: CheckedClient) -> None:
    result = force(client, "no%20spaces", {"state": "open"}, request_valid=False)
    assert result.status_code == 400
