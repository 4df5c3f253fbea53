"""Arranging the console tests through the public API: a poison workload."""

from __future__ import annotations

from typing import Any

from tests.console.conftest import TokenApi


def dead_letter_policy(api: TokenApi, queue: str, dlq: str, max_claims: int = 3) -> None:
    created = api.put(f"/v2/queues/{queue}")
    assert created.status_code in (201, 204), created.text
    done = api.patch_metadata(queue, [
        {"op": "add", "path": "/metadata/_max_claim_count", "value": max_claims},
        {"op": "add", "path": "/metadata/_dead_letter_queue", "value": dlq},
    ])
    assert done.status_code == 200, done.text


def reject_all(api: TokenApi, queue: str, description: str | None, count: int) -> list[str]:
    """Claim ``count`` messages of ``queue`` and reject each (terminal) with ``description``."""
    claimed = api.claim(queue, limit=count)
    assert claimed.status_code == 201, claimed.text
    ids = []
    for message in claimed.json["messages"]:
        claim_id = message["href"].split("claim_id=")[1]
        body: dict[str, Any] = {} if description is None else {"description": description}
        done = api.post(f"/v2/queues/{queue}/messages/{message['id']}/reject",
                        params={"claim_id": claim_id}, json=body)
        assert done.status_code == 204, done.text
        ids.append(message["id"])
    assert len(ids) == count
    return ids


def poison(api: TokenApi, queue: str, dlq: str, groups: dict[str, tuple[Any, int]],
           good: int = 0) -> dict[str, list[str]]:
    """Dead letter ``count`` copies of ``body`` per description, and leave ``good`` free.

    Rejected one group at a time: a claim takes the oldest free messages, so
    each group is posted, then rejected, before the next is posted.
    """
    dead_letter_policy(api, queue, dlq)
    rejected = {}
    for description, (body, count) in groups.items():
        api.post_messages(queue, *[{"body": body, "ttl": 3600} for _ in range(count)])
        rejected[description] = reject_all(api, queue, description, count)
    if good:
        api.post_messages(queue, *[{"body": {"n": n}, "ttl": 3600} for n in range(good)])
    return rejected


def stats(api: TokenApi, queue: str) -> dict[str, Any]:
    result = api.get(f"/v2/queues/{queue}/stats")
    assert result.status_code == 200, result.text
    return result.json["messages"]
