"""Small shorthands for contract tests; they use the contract only."""

from __future__ import annotations

import json
from typing import Any

from zq.events import fingerprint
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.base import Storage
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import ClaimRecord, Event, NewMessage

TTL = 300
CLAIM_TTL = 60
GRACE = 30


def new_message(body: Any = None, *, ttl: int = TTL, delay: int = 0) -> NewMessage:
    return raw_message(json.dumps(body if body is not None else {"n": 0}, sort_keys=True),
                       ttl=ttl, delay=delay)


def raw_message(body: str, *, ttl: int = TTL, delay: int = 0) -> NewMessage:
    """A message whose JSON text is exactly ``body``."""
    return NewMessage(body=body, ttl=ttl, delay=delay, fingerprint=fingerprint(body))


def post(
    storage: Storage,
    project: str,
    queue: str,
    count: int = 1,
    *,
    ttl: int = TTL,
    delay: int = 0,
    client_id: str | None = "poster",
) -> list[str]:
    """Post ``count`` messages with bodies {"n": 0..count-1}; their ids."""
    return storage.messages.post(
        project, queue,
        [new_message({"n": n}, ttl=ttl, delay=delay) for n in range(count)],
        client_id=client_id,
    )


def claim(
    storage: Storage,
    project: str,
    queue: str,
    limit: int = 10,
    *,
    ttl: int = CLAIM_TTL,
    grace: int = GRACE,
    client_id: str | None = "consumer",
    dead_letter: DeadLetterPolicy | None = None,
) -> ClaimRecord | None:
    return storage.claims.create(
        project, queue, ttl=ttl, grace=grace, limit=limit, client_id=client_id,
        rules=DeliveryRules(dead_letter=dead_letter),
    )


def ids(records: Any) -> list[str]:
    return [record.id for record in records]


def events_of(storage: Storage, project: str, kind: str | None = None) -> list[Event]:
    """Every event of ``project`` (optionally of one kind), in log order."""
    found: list[Event] = []
    after = None
    while True:
        page = storage.events.read(after=after, limit=1000)
        if not page:
            return found
        found += [e for e in page if e.project == project and kind in (None, e.kind)]
        after = page[-1].cursor
