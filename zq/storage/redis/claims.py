"""Claims on Redis: one hash and one member set per claim."""

from __future__ import annotations

from zq.errors import ClaimNotFound
from zq.storage.base import ClaimController
from zq.storage.delivery_rules import NO_RULES, DeliveryRules
from zq.storage.records import ClaimRecord, MessageRecord, random_id
from zq.storage.redis.consumers import consumer_args
from zq.storage.redis.controller import RedisController
from zq.storage.redis.settle import run_until_done
from zq.storage.redis.wire import (
    backoff_args,
    breaker_args,
    check_fresh,
    message_records,
    optional,
    policy_args,
    version_arg,
)


class RedisClaims(RedisController, ClaimController):
    def create(
        self,
        project: str,
        queue: str,
        *,
        ttl: int,
        grace: int,
        limit: int,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> ClaimRecord | None:
        claim_id = random_id()
        jitter = backoff_args(rules.backoff, limit)
        now, rows = run_until_done(self._scripts, self._clock, "claim", lambda now: [
            project, queue, claim_id, int(ttl), int(grace), limit, optional(client_id),
            *policy_args(rules.dead_letter, queue, now), version_arg(rules.metadata_version),
            *self._budget.args(), *jitter,
            *consumer_args(rules.consumer, claim_id, int(ttl), now), *breaker_args(rules),
        ])
        check_fresh(rows)
        if not rows:
            return None
        return ClaimRecord(id=claim_id, queue=queue, ttl=int(ttl), grace=int(grace),
                           created=now, expires=now + ttl,
                           messages=message_records(queue, rows))

    def get(self, project: str, queue: str, claim_id: str) -> ClaimRecord:
        found = self._scripts.run("claim_get", self._clock.now(), project, queue, claim_id)
        if found is None:
            raise ClaimNotFound.gone(claim_id)
        ttl, grace, created, expires, *rows = found
        messages: list[MessageRecord] = sorted(message_records(queue, rows),
                                               key=lambda m: m.marker)
        return ClaimRecord(id=claim_id, queue=queue, ttl=int(ttl), grace=int(grace),
                           created=float(created), expires=float(expires),
                           messages=messages)

    def renew(
        self,
        project: str,
        queue: str,
        claim_id: str,
        *,
        ttl: int,
        grace: int,
        client_id: str | None,
    ) -> None:
        renewed = self._scripts.run("renew", self._clock.now(), project, queue, claim_id,
                                    int(ttl), int(grace), optional(client_id))
        if renewed != 1:
            raise ClaimNotFound.gone(claim_id)

    def release(
        self, project: str, queue: str, claim_id: str, *, client_id: str | None
    ) -> None:
        self._scripts.run("release", self._clock.now(), project, queue, claim_id,
                          optional(client_id))

