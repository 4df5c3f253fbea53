"""Small builders shared by the MongoDB driver tests."""

from __future__ import annotations

from zq.events import fingerprint
from zq.storage.records import NewMessage


def message(body: str = '{"n": 1}', *, ttl: int = 300, delay: int = 0) -> NewMessage:
    return NewMessage(body=body, ttl=ttl, delay=delay, fingerprint=fingerprint(body))


def bodies(n: int) -> list[NewMessage]:
    return [message(f'{{"n": {i}}}') for i in range(n)]
