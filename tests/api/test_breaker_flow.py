"""The breaker and blame split rules flow from a queue's metadata to every step.

The service builds them for claims, pops, deletes by a claim's holder,
rejects and terminal rejects (zq.service.deliveries.outcome_rules); these
tests see each arrive through HTTP on the SQL driver. What the steps do is
the contract suite's (tests/contract/test_breaker.py, test_blame.py).
"""

from __future__ import annotations

import uuid
from typing import Any

import falcon
import falcon.testing
import pytest

from tests.openapi_contract import CheckedClient
from zq.clock import ManualClock

BREAKER = {"_breaker_failure_ratio": 0.5, "_breaker_min_failures": 2,
           "_breaker_probe_interval": 5, "_dead_letter_queue": "dlq"}


@pytest.fixture
def client(app: falcon.App, project: str) -> CheckedClient:
    return consumer(app, project)


def consumer(app: falcon.App, project: str) -> CheckedClient:
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    return CheckedClient(falcon.testing.TestClient(app), headers=headers)


def claim(client: CheckedClient, queue: str, limit: int) -> tuple[list[str], str]:
    result = client.post(f"/v2/queues/{queue}/claims", params={"limit": limit},
                         json={"ttl": 60, "grace": 60})
    assert result.status_code == 201, result.text
    return ([m["id"] for m in result.json["messages"]],
            result.headers["location"].rsplit("/", 1)[1])


def post(client: CheckedClient, queue: str, count: int) -> None:
    result = client.post(f"/v2/queues/{queue}/messages",
                         json={"messages": [{"body": n, "ttl": 3600} for n in range(count)]})
    assert result.status_code == 201, result.text


def reject(client: CheckedClient, queue: str, message_id: str, claim_id: str,
           body: dict[str, Any] | None) -> None:
    result = client.post(f"/v2/queues/{queue}/messages/{message_id}/reject",
                         params={"claim_id": claim_id}, json=body)
    assert result.status_code == 204, result.text


def breaker_state(client: CheckedClient, queue: str) -> str:
    return client.get(f"/v2/queues/{queue}/stats").json["breaker"]["state"]


def message(client: CheckedClient, queue: str, message_id: str) -> dict[str, Any]:
    result = client.get(f"/v2/queues/{queue}/messages/{message_id}",
                        params={"include_history": "true"})
    assert result.status_code == 200, result.text
    return result.json


def test_deletes_by_the_claim_holder_count_as_successes(client: CheckedClient) -> None:
    assert client.put("/v2/queues/q", json=BREAKER).status_code == 201
    post(client, "q", 5)
    ids, claim_id = claim(client, "q", 5)
    assert client.delete(f"/v2/queues/q/messages/{ids[0]}",
                         params={"claim_id": claim_id}).status_code == 204
    deleted = client.delete("/v2/queues/q/messages",
                            params={"ids": ",".join(ids[1:3]), "claim_ids": claim_id})
    assert deleted.status_code == 204
    reject(client, "q", ids[3], claim_id, {"description": "db down", "retry_after": 0})
    reject(client, "q", ids[4], claim_id, {"description": "db down", "retry_after": 0})
    # 2 failures of 5 outcomes: below the ratio, though 2 messages failed.
    assert breaker_state(client, "q") == "closed"


def test_an_open_breaker_holds_a_terminal_reject_and_stops_pops(
        client: CheckedClient) -> None:
    assert client.put("/v2/queues/q", json=BREAKER).status_code == 201
    post(client, "q", 3)
    ids, claim_id = claim(client, "q", 3)
    reject(client, "q", ids[0], claim_id, {"description": "db down", "retry_after": 0})
    reject(client, "q", ids[1], claim_id, {"description": "db down"})  # terminal: trips it
    assert breaker_state(client, "q") == "open"
    assert message(client, "dlq", ids[1])["history"][0]["reason"] == "rejected"
    reject(client, "q", ids[2], claim_id, {"description": "db down"})  # terminal, held
    held = message(client, "q", ids[2])
    assert (held["forgiven_count"], held["last_failure"]) == (1, "db down")
    assert "history" not in held
    popped = client.delete("/v2/queues/q/messages", params={"pop": 3})
    assert popped.status_code == 200 and popped.json["messages"] == []


def test_blame_split_is_shown_in_the_history(app: falcon.App, project: str,
                                             clock: ManualClock) -> None:
    first, second = consumer(app, project), consumer(app, project)
    assert first.put("/v2/queues/q", json={"_suspect_lapsed_consumers": True}).status_code == 201
    post(first, "q", 1)
    ids, _ = claim(first, "q", 1)
    clock.advance(61)
    # The first consumer never came back: its lapse is its own.
    assert claim(second, "q", 1)[0] == ids
    shown = message(second, "q", ids[0])
    assert shown["forgiven_count"] == 1
    assert [(e["reason"], e["charged_to"], e["client_id"]) for e in shown["history"]] == [
        ("lapsed", "consumer", first.headers["Client-ID"])]
