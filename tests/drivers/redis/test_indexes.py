"""The ready, held, waiting and expiry sets agree with the messages themselves.

Stats and list on Redis read those sets instead of every message, so after
any sequence of operations (with a budget small enough that scripts run out
of it and are called again) their answers must equal what the message
hashes alone say, computed here by brute force as the old layout did.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
    run_state_machine_as_test,
)

from tests.drivers.redis.helpers import message, post
from zq import events
from zq.clock import ManualClock
from zq.errors import ClaimNotFound
from zq.events import fingerprint
from zq.poison.backoff import BackoffPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import NewMessage
from zq.storage.redis import RedisStorage
from zq.storage.redis.wire import Budget

POLICY = DeadLetterPolicy(max_claim_count=2, queue="dlq")
BACKOFF = BackoffPolicy(delay=20, max_delay=50)
QUEUES = ("q", "dlq")
TINY = Budget(work=2, promote=2, skip=2)


@pytest.fixture
def tiny_storage(redis_target: tuple[str, str]) -> Iterator[tuple[RedisStorage, ManualClock]]:
    url, base = redis_target
    clock = ManualClock()
    client = redis.Redis.from_url(url, decode_responses=True)
    store = RedisStorage(client, f"{base}.{uuid.uuid4().hex[:8]}:", clock, TINY)
    try:
        yield store, clock
    finally:
        store.close()


def qid_of(storage: RedisStorage, project: str, queue: str) -> str | None:
    return storage.client.hget(storage.prefix + "queues",
                               f"{len(project.encode())}:{project}{queue}")


def messages_of(storage: RedisStorage, qid: str, ids: set[str]) -> dict[str, dict[str, str]]:
    """The hashes of the given ids that belong to queue ``qid``."""
    found = {}
    for mid in ids:
        fields = storage.client.hgetall(f"{storage.prefix}m:{mid}")
        if fields and fields["q"] == qid:
            found[mid] = fields
    return found


def check_sets(storage: RedisStorage, qid: str, msgs: dict[str, dict[str, str]],
               now: float) -> None:
    def zset(name: str) -> dict[str, float]:
        return dict(storage.client.zrange(f"{storage.prefix}{name}:{qid}", 0, -1,
                                          withscores=True))

    order, ready, held, waiting, expiry, backoff = (
        zset(n) for n in ("qo", "qr", "qh", "qw", "qx", "qb"))
    assert set(order) == set(msgs) == set(expiry)
    assert set(backoff) <= set(held)
    for mid, free_at in backoff.items():
        assert free_at == float(msgs[mid]["delay"]) > float(msgs[mid]["cexp"])
    assert set(ready) | set(held) | set(waiting) == set(order)
    assert len(ready) + len(held) + len(waiting) == len(order)
    for mid, m in msgs.items():
        assert order[mid] == float(m["marker"])
        assert expiry[mid] == float(m["expires"])
        live_claim = m["claim"] != "" and float(m["cexp"]) > now
        if mid in held:
            assert held[mid] == float(m["cexp"]) and m["claim"] != ""
        else:
            assert not live_claim
        if mid in waiting:
            assert waiting[mid] == float(m["delay"])
        if mid in ready:
            assert ready[mid] == float(m["marker"]) and float(m["delay"]) <= now


def brute_stats(msgs: dict[str, dict[str, str]], now: float) -> tuple[Any, ...]:
    alive = sorted((m for m in msgs.values() if float(m["expires"]) > now),
                   key=lambda m: int(m["marker"]))
    claimed = sum(1 for m in alive if m["claim"] != "" and float(m["cexp"]) > now)
    delayed = sum(1 for m in alive if not (m["claim"] != "" and float(m["cexp"]) > now)
                  and float(m["delay"]) > now)
    ends = [(m["marker"]) for m in (alive[:1] + alive[-1:])]
    return len(alive) - claimed, claimed, delayed, ends


def brute_list(msgs: dict[str, dict[str, str]], now: float, *, echo: bool,
               claimed: bool, delayed: bool) -> list[int]:
    def held(m: dict[str, str]) -> bool:
        return m["claim"] != "" and float(m["cexp"]) > now

    # A held message is claimed, not delayed: its delay is its backoff to come.
    shown = [m for m in msgs.values()
             if float(m["expires"]) > now
             and (echo or m["client"] != "c1")
             and (claimed or not held(m))
             and (delayed or held(m) or float(m["delay"]) <= now)]
    return sorted(int(m["marker"]) for m in shown)


def new_messages(count: int, ttl: int, delay: int) -> list[NewMessage]:
    body = json.dumps({"n": count})
    return [NewMessage(body=body, ttl=ttl, delay=delay, fingerprint=fingerprint(body))] * count


def test_sets_agree_with_messages_after_any_operations(
    tiny_storage: tuple[RedisStorage, ManualClock],
) -> None:
    storage, clock = tiny_storage

    class Queue(RuleBasedStateMachine):
        claims = Bundle("claims")

        def __init__(self) -> None:
            super().__init__()
            self.project = f"p-{uuid.uuid4().hex}"
            self.ids: set[str] = set()

        @rule(count=st.integers(1, 3), ttl=st.sampled_from([30, 120, 600]),
              delay=st.sampled_from([0, 0, 20]), client=st.sampled_from(["c1", "c2"]))
        def post(self, count: int, ttl: int, delay: int, client: str) -> None:
            self.ids |= set(storage.messages.post(
                self.project, "q", new_messages(count, ttl, delay), client_id=client))

        @rule(target=claims, limit=st.integers(1, 4), ttl=st.sampled_from([30, 90]),
              grace=st.sampled_from([0, 30]), dead_letter=st.booleans(), backoff=st.booleans())
        def claim(self, limit: int, ttl: int, grace: int, dead_letter: bool,
                  backoff: bool) -> str:
            made = storage.claims.create(self.project, "q", ttl=ttl, grace=grace, limit=limit,
                                         client_id="c2",
                                         rules=DeliveryRules(
                                             dead_letter=POLICY if dead_letter else None,
                                             backoff=BACKOFF if backoff else None))
            return made.id if made else "none"

        @rule(limit=st.integers(1, 3), dead_letter=st.booleans())
        def pop(self, limit: int, dead_letter: bool) -> None:
            storage.messages.pop(self.project, "q", limit=limit, client_id="c2",
                                 rules=DeliveryRules(dead_letter=POLICY if dead_letter else None))

        @rule(claim=consumes(claims))
        def release(self, claim: str) -> None:
            storage.claims.release(self.project, "q", claim, client_id=None)

        @rule(claim=claims, ttl=st.sampled_from([30, 120]))
        def renew(self, claim: str, ttl: int) -> None:
            with contextlib.suppress(ClaimNotFound):
                storage.claims.renew(self.project, "q", claim, ttl=ttl, grace=0, client_id=None)

        @rule(claim=claims)
        def delete_claimed(self, claim: str) -> None:
            try:
                held = storage.claims.get(self.project, "q", claim).messages
            except ClaimNotFound:
                return
            if held:
                storage.messages.delete(self.project, "q", held[0].id, claim_id=claim,
                                        client_id=None)

        @rule(data=st.data())
        def delete_any(self, data: st.DataObject) -> None:
            if self.ids:
                mid = data.draw(st.sampled_from(sorted(self.ids)))
                for queue in QUEUES:
                    storage.messages.delete_many(self.project, queue, [mid], client_id=None)

        @rule(seconds=st.sampled_from([1, 10, 25, 60]))
        def advance(self, seconds: int) -> None:
            clock.advance(seconds)

        @rule()
        def gc(self) -> None:
            storage.gc()

        @rule(queue=st.sampled_from(QUEUES))
        def purge(self, queue: str) -> None:
            storage.queues.purge(self.project, queue)

        @invariant()
        def sets_and_answers_agree_with_the_messages(self) -> None:
            now = clock.now()
            for queue in QUEUES:
                qid = qid_of(storage, self.project, queue)
                if qid is None:
                    continue
                msgs = messages_of(storage, qid, self.ids)
                check_sets(storage, qid, msgs, now)
                stats = storage.queues.stats(self.project, queue)
                ends = [str(r.marker) for r in storage.messages.get_many(
                    self.project, queue, [s.id for s in (stats.oldest, stats.newest) if s])]
                assert (stats.free, stats.claimed, stats.delayed, ends) == brute_stats(msgs, now)
                for echo in (False, True):
                    for claimed in (False, True):
                        for delayed in (False, True):
                            listed = storage.messages.list(
                                self.project, queue, limit=100, echo=echo, client_id="c1",
                                include_claimed=claimed, include_delayed=delayed)
                            assert [m.marker for m in listed] == brute_list(
                                msgs, now, echo=echo, claimed=claimed, delayed=delayed)
                # The reads settled the queue: the sets hold no stale entry.
                check_sets(storage, qid, messages_of(storage, qid, self.ids), now)

    run_state_machine_as_test(
        Queue, settings=settings(max_examples=25, stateful_step_count=30, deadline=None))


def test_claim_behind_more_expired_messages_than_the_budget(
    tiny_storage: tuple[RedisStorage, ManualClock],
) -> None:
    storage, clock = tiny_storage
    expiring = storage.messages.post("p", "q", [message(n, ttl=60) for n in range(7)],
                                     client_id=None)
    kept = post(storage, "p", "q", 2)
    clock.advance(60)
    made = storage.claims.create("p", "q", ttl=60, grace=0, limit=5, client_id=None,
                                 rules=DeliveryRules(dead_letter=None))
    assert made is not None and [m.id for m in made.messages] == kept
    expired = [e.message_id for e in storage.events.read(limit=1000)
               if e.kind == events.EXPIRED and e.project == "p"]
    assert sorted(expired) == sorted(expiring)


def test_stats_and_list_after_more_expiries_than_the_budget(
    tiny_storage: tuple[RedisStorage, ManualClock],
) -> None:
    storage, clock = tiny_storage
    storage.messages.post("p", "q", [message(n, ttl=60) for n in range(7)], client_id=None)
    kept = post(storage, "p", "q", 2)
    clock.advance(60)
    stats = storage.queues.stats("p", "q")
    assert (stats.free, stats.claimed, stats.oldest.id, stats.newest.id) == (
        2, 0, kept[0], kept[1])
    assert [m.id for m in storage.messages.list("p", "q", echo=True)] == kept


def test_list_skips_any_run_of_the_callers_own_messages(
    tiny_storage: tuple[RedisStorage, ManualClock],
) -> None:
    storage, _ = tiny_storage
    storage.messages.post("p", "q", [message(n) for n in range(9)], client_id="me")
    theirs = storage.messages.post("p", "q", [message(n) for n in range(3)], client_id="you")
    listed = storage.messages.list("p", "q", limit=2, client_id="me")
    assert [m.id for m in listed] == theirs[:2]
    after = storage.messages.list("p", "q", limit=5, client_id="me", marker=listed[-1].marker)
    assert [m.id for m in after] == theirs[2:]


def test_claim_moves_a_run_of_exhausted_messages_longer_than_the_budget(
    tiny_storage: tuple[RedisStorage, ManualClock],
) -> None:
    storage, clock = tiny_storage
    poison = post(storage, "p", "q", 5)
    for _ in range(POLICY.max_claim_count):
        made = storage.claims.create("p", "q", ttl=60, grace=0, limit=5, client_id=None,
                                     rules=DeliveryRules(dead_letter=None))
        assert made is not None and len(made.messages) == 5
        clock.advance(60)
    good = post(storage, "p", "q", 2)
    made = storage.claims.create("p", "q", ttl=60, grace=0, limit=2, client_id=None,
                                 rules=DeliveryRules(dead_letter=POLICY))
    assert made is not None and [m.id for m in made.messages] == good
    assert [m.id for m in storage.messages.list("p", "dlq", echo=True)] == poison


def test_a_claim_whose_budget_runs_out_after_a_delivery_returns_what_it_has(
    tiny_storage: tuple[RedisStorage, ManualClock],
) -> None:
    """The documented bound: past budget.work dead letter moves, the batch is not filled."""
    storage, clock = tiny_storage

    def claim(limit: int, policy: DeadLetterPolicy | None = None, ttl: int = 60) -> list[str]:
        made = storage.claims.create("p", "q", ttl=ttl, grace=0, limit=limit, client_id=None,
                                     rules=DeliveryRules(dead_letter=policy))
        return [] if made is None else [m.id for m in made.messages]

    first = post(storage, "p", "q", 1)
    poison = post(storage, "p", "q", TINY.work + 1)
    hold = storage.claims.create("p", "q", ttl=600, grace=0, limit=1, client_id=None,
                                 rules=DeliveryRules(dead_letter=None))
    assert hold is not None
    for _ in range(POLICY.max_claim_count):
        assert claim(len(poison)) == poison
        clock.advance(60)
    storage.claims.release("p", "q", hold.id, client_id=None)
    last = post(storage, "p", "q", 1)
    assert claim(5, POLICY) == first
    assert claim(5, POLICY) == last
    assert [m.id for m in storage.messages.list("p", "dlq", echo=True)] == poison


def test_sweeping_expired_messages_keeps_their_claims_expiry_record(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    """A claim or read that removes expired messages records their expired claim
    first, as gc (claims first, then messages) did before messages were swept
    by claims and reads."""
    posted = storage.messages.post(project, "q", [message(n, ttl=60) for n in range(2)],
                                   client_id=None)
    held = storage.claims.create(project, "q", ttl=60, grace=0, limit=2,
                                 client_id="slow-worker")
    assert held is not None
    clock.advance(60)
    assert storage.queues.stats(project, "q").total == 0
    assert storage.claims.create(project, "q", ttl=60, grace=0, limit=5, client_id=None,
                                 rules=DeliveryRules(dead_letter=None)) is None
    storage.gc()
    expired = [e for e in storage.events.read(limit=10000)
               if e.project == project and e.kind == events.EXPIRED]
    assert [(e.claim_id, e.client_id, e.detail) for e in expired if e.message_id is None] == [
        (held.id, "slow-worker", {"target": "claim", "messages": 2})]
    assert sorted(e.message_id for e in expired if e.message_id) == sorted(posted)
