"""Threads racing to claim one queue with a dead letter policy.

Eight workers claim batches, delete the good messages by claim id and
release the poison ones, until the queue is empty. Whatever the interleaving:
no message is ever held by two live claims, every good message is deleted
exactly once, and every poison message reaches the dead letter queue exactly
once, after exactly ``_max_claim_count`` deliveries.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest

from tests.contract.helpers import events_of, new_message
from zq import events
from zq.poison.dead_letter import policy_from_metadata
from zq.storage.delivery_rules import DeliveryRules

pytestmark = pytest.mark.slow

MESSAGES = 300
POISON_EVERY = 10  # 10% poison
MAX_CLAIMS = 3
WORKERS = 8
DEADLINE = 60.0  # seconds; the race normally ends in a few


def test_concurrent_claimers_never_share_and_dead_letter_exactly_once(
    storage, project
):
    metadata = {"_max_claim_count": MAX_CLAIMS, "_dead_letter_queue": "dlq"}
    storage.queues.create(project, "work", metadata)
    policy = policy_from_metadata(metadata)
    posted: list[str] = []
    for start in range(0, MESSAGES, 20):
        posted += storage.messages.post(
            project, "work",
            [new_message({"n": n}) for n in range(start, start + 20)], client_id="producer")
    poison = {message_id for n, message_id in enumerate(posted) if n % POISON_EVERY == 0}
    good = set(posted) - poison

    lock = threading.Lock()
    holders: dict[str, str] = {}  # message id -> claim id holding it, per the test
    double_holds: list[tuple[str, str, str]] = []
    deliveries: Counter[str] = Counter()
    deleted: Counter[str] = Counter()
    errors: list[BaseException] = []
    failed = threading.Event()
    deadline = time.monotonic() + DEADLINE

    def forget(message_ids: list[str]) -> None:
        with lock:
            for message_id in message_ids:
                holders.pop(message_id, None)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        client_id = f"worker-{seed}"
        while time.monotonic() < deadline and not failed.is_set():
            claimed = storage.claims.create(
                project, "work", ttl=300, grace=60, limit=rng.randint(5, 10),
                client_id=client_id, rules=DeliveryRules(dead_letter=policy))
            if claimed is None:
                if storage.queues.stats(project, "work").total == 0:
                    return
                time.sleep(0.001)  # others hold the rest; they will release it
                continue
            taken = [m.id for m in claimed.messages]
            with lock:
                for message_id in taken:
                    if message_id in holders:
                        double_holds.append((message_id, holders[message_id], claimed.id))
                    holders[message_id] = claimed.id
                    deliveries[message_id] += 1
            time.sleep(rng.random() * 0.002)  # "work" while holding the claim
            to_delete = [m for m in taken if m in good]
            # Drop the test's record of holding just before the storage lets
            # go, so a quick re-claim by another worker is never a false alarm.
            forget(to_delete)
            if to_delete:
                done = storage.messages.delete_many(
                    project, "work", to_delete, claim_ids=[claimed.id], client_id=client_id)
                with lock:
                    deleted.update(done)
            forget([m for m in taken if m not in good])
            storage.claims.release(project, "work", claimed.id, client_id=client_id)
        if not failed.is_set():
            raise TimeoutError("the claim race did not finish in time")

    def run(seed: int) -> None:
        try:
            worker(seed)
        except BaseException as error:
            errors.append(error)
            failed.set()  # the others stop too instead of running to the deadline

    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert double_holds == []
    assert set(deleted) == good
    assert all(count == 1 for count in deleted.values())
    assert {message_id: deliveries[message_id] for message_id in poison} == dict.fromkeys(
        poison, MAX_CLAIMS)

    stats = storage.queues.stats(project, "work")
    assert (stats.free, stats.claimed) == (0, 0)
    in_dlq = storage.messages.list(project, "dlq", limit=MESSAGES, echo=True)
    assert sorted(m.id for m in in_dlq) == sorted(poison)
    assert all(m.claim_count == MAX_CLAIMS and len(m.history) == 1 for m in in_dlq)

    logged = events_of(storage, project)
    claimed_per_id = Counter(e.message_id for e in logged if e.kind == events.CLAIMED)
    assert {message_id: claimed_per_id[message_id] for message_id in poison} == dict.fromkeys(
        poison, MAX_CLAIMS)
    assert all(claimed_per_id[message_id] == 1 for message_id in good)
    moved = Counter(e.message_id for e in logged if e.kind == events.DEAD_LETTERED)
    assert moved == Counter(poison)
    deleted_events = Counter(e.message_id for e in logged if e.kind == events.DELETED)
    assert deleted_events == Counter(good)
