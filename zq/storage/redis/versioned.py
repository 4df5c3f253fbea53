"""The Redis driver's VersionedDeliveries: post, pop and claim checked at a metadata version.

The scripts compare the version inside the same script as the delivery
(``stale_metadata`` in lua/_lib.lua) and answer STALE, changing nothing,
when it moved; the plain deliveries pass no version ("-").
"""

from __future__ import annotations

from collections.abc import Sequence

from zq.poison.backoff import BackoffPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.base import VersionedDeliveries
from zq.storage.records import ClaimRecord, ConsumerEntry, MessageRecord, NewMessage
from zq.storage.redis.claims import RedisClaims
from zq.storage.redis.messages import RedisMessages


class RedisVersionedDeliveries(VersionedDeliveries):
    def __init__(self, messages: RedisMessages, claims: RedisClaims) -> None:
        self._messages = messages
        self._claims = claims

    def post(
        self,
        project: str,
        queue: str,
        messages: Sequence[NewMessage],
        *,
        client_id: str | None,
        metadata_version: str,
    ) -> list[str]:
        return self._messages.post(project, queue, messages, client_id=client_id,
                                   metadata_version=metadata_version)

    def pop(
        self,
        project: str,
        queue: str,
        *,
        limit: int,
        client_id: str | None,
        dead_letter: DeadLetterPolicy | None,
        metadata_version: str,
    ) -> list[MessageRecord]:
        return self._messages.pop(project, queue, limit=limit, client_id=client_id,
                                  dead_letter=dead_letter, metadata_version=metadata_version)

    def claim(
        self,
        project: str,
        queue: str,
        *,
        ttl: int,
        grace: int,
        limit: int,
        client_id: str | None,
        dead_letter: DeadLetterPolicy | None,
        metadata_version: str,
        backoff: BackoffPolicy | None = None,
        consumer: ConsumerEntry | None = None,
    ) -> ClaimRecord | None:
        return self._claims.create(project, queue, ttl=ttl, grace=grace, limit=limit,
                                   client_id=client_id, dead_letter=dead_letter,
                                   metadata_version=metadata_version, backoff=backoff,
                                   consumer=consumer)
