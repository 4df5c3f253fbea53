"""Connections killed while workers claim, delete and dead letter.

Workers race on one queue whose poison messages (every tenth) are never
deleted, so they reach the claim limit and are dead lettered. Meanwhile a
chaos thread kills the workers' Redis connections (CLIENT KILL) and flushes
the script cache; workers also abandon some claims, as a crashed worker
would. Whatever failed where, every posted message must end in exactly one
place: still in the source, in the dead letter queue, or deleted (once).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import random
import threading
import time

import redis

from tests.drivers.redis.helpers import message, visible
from zq.clock import ManualClock
from zq.errors import ClaimMismatch, StorageUnavailable
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.base import Storage
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import Event
from zq.storage.redis import open_redis

MESSAGES = 200
WORKERS = 4
CLAIM_TTL = 30
POLICY = DeadLetterPolicy(max_claim_count=2, queue="dlq")


def is_poison(body: str) -> bool:
    return json.loads(body)["n"] % 10 == 0


def all_events(storage: Storage, project: str) -> list[Event]:
    found, after = [], None
    while page := storage.events.read(after=after, limit=1000):
        found += [e for e in page if e.project == project]
        after = page[-1].cursor
    return found


class Chaos:
    """Kills the connections of one client name and flushes scripts, at random."""

    def __init__(self, client: redis.Redis, victim_name: str) -> None:
        self.client = client
        self.victim_name = victim_name
        self.kills = 0
        self.flushes = 0
        self.stop = threading.Event()

    def run(self) -> None:
        rng = random.Random(7)
        tick = 0
        while not self.stop.is_set():
            time.sleep(rng.uniform(0.002, 0.02))
            tick += 1
            if tick % 5 == 0:
                self.client.script_flush()
                self.flushes += 1
                continue
            for entry in self.client.client_list():
                if entry.get("name") == self.victim_name:
                    with contextlib.suppress(redis.ResponseError):  # already gone
                        self.kills += self.client.client_kill_filter(_id=entry["id"])


class Worker:
    def __init__(self, storage: Storage, project: str, clock: ManualClock, seed: int) -> None:
        self.storage = storage
        self.project = project
        self.clock = clock
        self.rng = random.Random(seed)
        self.failures = 0
        self.crashed: BaseException | None = None

    def run(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                try:
                    self.step()
                except StorageUnavailable:
                    self.failures += 1
                except ClaimMismatch:
                    pass  # another worker moved the clock past our claim
        except BaseException as error:  # reported by the test, not lost in a thread
            self.crashed = error

    def step(self) -> None:
        claim = self.storage.claims.create(
            self.project, "src", ttl=CLAIM_TTL, grace=CLAIM_TTL, limit=5, client_id="w",
            rules=DeliveryRules(dead_letter=POLICY),
        )
        if claim is None:
            self.clock.advance(CLAIM_TTL + 1)  # let abandoned claims expire
            return
        if self.rng.random() < 0.1:
            return  # the worker "crashes" holding its claim
        done = [m.id for m in claim.messages if not is_poison(m.body)]
        if self.rng.random() < 0.5:
            self.storage.messages.delete_many(self.project, "src", done,
                                              claim_ids=[claim.id], client_id="w")
        else:
            for mid in done:
                self.storage.messages.delete(self.project, "src", mid,
                                             claim_id=claim.id, client_id="w")


def test_no_message_ends_in_two_queues_or_none(
    redis_target: tuple[str, str], project: str
) -> None:
    url, prefix = redis_target
    victim = f"{prefix}-workers"
    clock = ManualClock()
    uri = f"{url}?prefix={prefix}&client_name={victim}"
    storage = open_redis(uri, clock=clock)
    admin = redis.Redis.from_url(url, decode_responses=True)
    posted = []
    for start in range(0, MESSAGES, 20):
        posted += storage.messages.post(
            project, "src", [message(n, ttl=86400) for n in range(start, start + 20)],
            client_id="poster")

    chaos = Chaos(admin, victim)
    stop = threading.Event()
    workers = [Worker(storage, project, clock, seed) for seed in range(WORKERS)]
    threads = [threading.Thread(target=w.run, args=(stop,)) for w in workers]
    chaos_thread = threading.Thread(target=chaos.run)
    for thread in [*threads, chaos_thread]:
        thread.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (chaos.kills < 30 or chaos.flushes < 3):
        time.sleep(0.05)
    chaos.stop.set()
    chaos_thread.join()
    # Without chaos, the workers finish the queue: the rest is deleted or
    # dead lettered.
    deadline = time.monotonic() + 30
    while storage.queues.stats(project, "src").total and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join()

    try:
        assert [w.crashed for w in workers] == [None] * WORKERS
        assert chaos.kills >= 30
        assert chaos.flushes >= 3
        assert sum(w.failures for w in workers) > 0  # the failures did hit the workers
        source = visible(storage, project, "src")
        dead = visible(storage, project, "dlq")
        events = all_events(storage, project)
        deleted = [e.message_id for e in events if e.kind == "deleted"]

        assert len(deleted) == len(set(deleted)), "a message was deleted twice"
        places = collections.Counter([*source, *dead, *deleted])
        assert set(places) == set(posted), "a message was lost or invented"
        assert all(n == 1 for n in places.values()), "a message is in two places"
        assert source == []

        poison = {m.id for m in storage.messages.get_many(project, "dlq", dead)
                  if is_poison(m.body)}
        assert poison == {posted[n] for n in range(0, MESSAGES, 10)} & set(dead)
        assert not {posted[n] for n in range(0, MESSAGES, 10)} & set(deleted)
        moved = [e.message_id for e in events if e.kind == "dead_lettered"]
        assert sorted(moved) == sorted(dead)
        for record in storage.messages.get_many(project, "dlq", dead):
            assert record.claim_count == POLICY.max_claim_count
            assert [h["queue"] for h in record.history] == ["src"]

        # Never two live claims on one message: each claim of a message
        # starts after the previous one expired (nothing was released).
        claims = collections.defaultdict(list)
        for e in events:
            if e.kind == "claimed":
                claims[e.message_id].append(e)
        for mid, seen in claims.items():
            assert [e.claim_count for e in seen] == list(range(1, len(seen) + 1)), mid
            for before, after in itertools.pairwise(seen):
                assert after.time >= before.time + CLAIM_TTL, mid
    finally:
        storage.close()
        admin.close()
