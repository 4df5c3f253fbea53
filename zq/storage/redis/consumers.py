"""The consumer log on Redis: a hash and an expiry index per queue, one script per write."""

from __future__ import annotations

from zq.storage.consumer_log import ConsumerLog
from zq.storage.records import ConsumerClaim, ConsumerEntry
from zq.storage.redis.controller import RedisController


def _time(value: float) -> str:
    return repr(float(value))


def consumer_args(consumer: ConsumerEntry | None, claim_id: str, ttl: int,
                  now: float) -> list[str]:
    """The five consumer arguments of claim.lua: the claim's record, written
    by the claim script itself (ConsumerEntry)."""
    if consumer is None:
        return ["", "", "", "", ""]
    claim = consumer.record(claim_id, ttl, now)
    return ["1", claim.client_id, _time(claim.claimed), _time(claim.expires),
            _time(consumer.forget_before(now))]


class RedisConsumers(RedisController, ConsumerLog):
    def record(self, project: str, queue: str, claim: ConsumerClaim, *,
               forget_before: float) -> None:
        settled = "" if claim.settled is None else _time(claim.settled)
        self._scripts.run(
            "consumer_record", claim.claimed, project, queue, claim.claim_id, int(claim.ttl),
            _time(claim.claimed), _time(claim.expires), settled, claim.client_id,
            _time(forget_before))

    def settle(self, project: str, queue: str, claim_id: str, *, now: float,
               ended: bool) -> None:
        self._scripts.run("consumer_settle", now, project, queue, claim_id,
                          "end" if ended else "settle", 0)

    def extend(self, project: str, queue: str, claim_id: str, *, ttl: int,
               now: float) -> None:
        self._scripts.run("consumer_settle", now, project, queue, claim_id, "renew", int(ttl))

    def forget(self, project: str, queue: str) -> None:
        self._scripts.run("consumer_forget", 0.0, project, queue)

    def claims(self, project: str, queue: str, *, expires_after: float,
               client_id: str | None = None) -> list[ConsumerClaim]:
        flat = self._scripts.run("consumer_read", expires_after, project, queue,
                                 _time(expires_after))
        found = []
        for claim_id, text in zip(flat[::2], flat[1::2], strict=True):
            ttl, claimed, expires, settled, client = text.split("|", 4)
            if client_id is not None and client != client_id:
                continue
            found.append(ConsumerClaim(
                client_id=client, claim_id=claim_id, ttl=int(ttl), claimed=float(claimed),
                expires=float(expires), settled=float(settled) if settled else None))
        return found
