"""Tenant isolation through the HTTP API, one case per endpoint.

Project B owns queue "shared" (metadata, messages, a claim, a dead letter
queue that the next claim in B's project would move a message to) and
queue "b-only".
Project A, with its own token, uses the same queue name and B's message
and claim ids on every endpoint. Each case proves that A's answer
mentions nothing of B and that B's state is unchanged afterwards; a second
test proves that A naming B's project in X-Project-ID is refused outright.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from tests.api.helpers import PATCH_TYPE, assert_error

QUEUE = "shared"


@dataclass
class BState:
    """What project B set up, and the strings that must never reach A."""

    message_ids: list[str]
    claim_id: str
    claimed_id: str

    def secrets(self, project: str, sent: list[str]) -> list[str]:
        """B's data in text form; ids A itself sent may be echoed in errors."""
        ids = [i for i in [*self.message_ids, self.claim_id] if not any(i in s for s in sent)]
        return [*ids, "b-secret", "b-only", project]


@pytest.fixture
def b_state(tenants) -> BState:
    b = tenants.b
    meta = {"owner": "b-secret-meta", "_max_claim_count": 1, "_dead_letter_queue": "shared-dlq",
            "_breaker_failure_ratio": 0.5}
    assert b.put(f"/v2/queues/{QUEUE}", json=meta).status_code == 201
    assert b.put("/v2/queues/b-only").status_code == 201
    ids = b.post_messages(QUEUE, *({"body": {"b-secret": n}, "ttl": 600} for n in range(3)))
    claim = b.claim(QUEUE, limit=1)
    assert claim.status_code == 201
    claimed_id = claim.json["messages"][0]["id"]
    claim_id = claim.headers["Location"].rsplit("/", 1)[1]
    # The second message is claimed once and released: the next claim in
    # B's project moves it to the dead letter queue.
    released = b.claim(QUEUE, limit=1)
    assert b.delete(released.headers["Location"]).status_code == 204
    return BState(ids, claim_id, claimed_id)


def snapshot(b) -> dict[str, Any]:
    """Everything B can observe of its own data."""
    reads = {
        "queues": "/v2/queues?detailed=true",
        "metadata": f"/v2/queues/{QUEUE}",
        "stats": f"/v2/queues/{QUEUE}/stats",
        "messages": f"/v2/queues/{QUEUE}/messages?include_claimed=true&echo=true"
                    "&include_history=true",
        "dlq": "/v2/queues/shared-dlq/messages?include_claimed=true&echo=true",
    }
    state = {}
    for name, path in reads.items():
        result = b.get(path)
        state[name] = (result.status_code, result.text)
    return state


def claim_path(s: BState) -> str:
    return f"/v2/queues/{QUEUE}/claims/{s.claim_id}"


# Each case: what A does with B's names and ids, and the status A gets.
CASES: dict[str, tuple[Callable[[Any, BState], Any], int]] = {
    "queues list": (lambda a, s: a.get("/v2/queues?detailed=true&with_count=true"), 200),
    "queue create": (lambda a, s: a.put(f"/v2/queues/{QUEUE}", json={"owner": "a"}), 201),
    "queue metadata get": (lambda a, s: a.get(f"/v2/queues/{QUEUE}"), 200),
    "queue metadata patch": (lambda a, s: a.patch(
        f"/v2/queues/{QUEUE}",
        body=orjson.dumps([{"op": "replace", "path": "/metadata/owner", "value": "a"}]),
        headers={"Content-Type": PATCH_TYPE}), 404),
    "queue delete": (lambda a, s: a.delete(f"/v2/queues/{QUEUE}"), 204),
    "queue stats": (lambda a, s: a.get(f"/v2/queues/{QUEUE}/stats"), 200),
    "queue purge": (lambda a, s: a.post(
        f"/v2/queues/{QUEUE}/purge", json={"resource_types": ["messages"]}), 204),
    "messages post": (lambda a, s: a.post(
        f"/v2/queues/{QUEUE}/messages", json={"messages": [{"body": "a"}]}), 201),
    "messages list": (lambda a, s: a.get(
        f"/v2/queues/{QUEUE}/messages?include_claimed=true&echo=true"), 200),
    "messages get by ids": (lambda a, s: a.get(
        f"/v2/queues/{QUEUE}/messages?ids={','.join(s.message_ids)}"), 404),
    "message get": (lambda a, s: a.get(
        f"/v2/queues/{QUEUE}/messages/{s.message_ids[1]}"), 404),
    "message delete": (lambda a, s: a.delete(
        f"/v2/queues/{QUEUE}/messages/{s.message_ids[1]}"), 204),
    "claimed message delete with B's claim": (lambda a, s: a.delete(
        f"/v2/queues/{QUEUE}/messages/{s.claimed_id}?claim_id={s.claim_id}"), 204),
    "messages bulk delete": (lambda a, s: a.delete(
        f"/v2/queues/{QUEUE}/messages?ids={','.join(s.message_ids)}"), 204),
    "messages pop": (lambda a, s: a.delete(f"/v2/queues/{QUEUE}/messages?pop=5"), 200),
    "claim create (and dead letter)": (lambda a, s: a.claim(QUEUE, limit=10), 204),
    "claim get": (lambda a, s: a.get(claim_path(s)), 404),
    "claim renew": (lambda a, s: a.patch(claim_path(s), json={"ttl": 600, "grace": 60}), 404),
    "claim release": (lambda a, s: a.delete(claim_path(s)), 204),
    "breaker force": (lambda a, s: a.post(
        f"/v2/queues/{QUEUE}/breaker", json={"state": "open"}), 404),
    "share": (lambda a, s: a.post(
        f"/v2/queues/{QUEUE}/share", json={"methods": ["GET", "DELETE"]}), 200),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_never_sees_or_changes_b(tenants, b_state, case):
    act, status = CASES[case]
    before = snapshot(tenants.b)
    result = act(tenants.a, b_state)
    assert result.status_code == status, result.text
    shown = result.text + " ".join(f"{k}: {v}" for k, v in result.headers.items())
    for secret in b_state.secrets(tenants.b.project, tenants.a.sent):
        assert secret not in shown, (case, secret)
    assert snapshot(tenants.b) == before


def test_b_state_would_reveal_a_change(tenants, b_state):
    # The snapshot is sensitive: B's own delete and claim change it.
    before = snapshot(tenants.b)
    assert tenants.b.claim(QUEUE, limit=10).status_code == 201  # dead letters one
    after = snapshot(tenants.b)
    assert b_state.message_ids[1] in after["dlq"][1] and after["messages"] != before["messages"]
    before = after
    tenants.b.delete(f"/v2/queues/shared-dlq/messages/{b_state.message_ids[1]}")
    assert snapshot(tenants.b)["dlq"] != before["dlq"]


@pytest.mark.parametrize("case", list(CASES))
def test_naming_b_in_x_project_id_is_forbidden(tenants, b_state, case):
    act, _ = CASES[case]
    before = snapshot(tenants.b)

    class Impersonating:
        """A's client with X-Project-ID set to B's project on every request."""

        def __getattr__(self, name):
            method = getattr(tenants.a, name)

            def call(*args, headers=None, **kwargs):
                headers = {**(headers or {}), "X-Project-ID": tenants.b.project}
                return method(*args, headers=headers, **kwargs)

            return call

        def claim(self, queue, *, limit=10):
            return self.post(f"/v2/queues/{queue}/claims", params={"limit": limit},
                             json={"ttl": 60, "grace": 60})

    assert_error(act(Impersonating(), b_state), 403, "X-Project-ID")
    assert snapshot(tenants.b) == before
