"""Threads racing on a queue with backoff, rejecting their poison messages.

Eight workers claim batches with a backoff policy, delete the good messages
by claim id and reject the poison ones: for a retry (the backoff decides
when they come back) while they have been delivered fewer than 2 times,
for good after. Claims that find nothing move the manual clock on, so
backed-off messages come back. Whatever the interleaving: no message is
held by two live claims, every good message is deleted exactly once, every
poison message is rejected for a retry exactly once and then reaches the
dead letter queue exactly once, by a terminal reject.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter

import pytest

from tests.contract.helpers import events_of, new_message
from zq import events
from zq.poison import moves
from zq.poison.backoff import BackoffPolicy
from zq.storage.delivery_rules import DeliveryRules

pytestmark = pytest.mark.slow

MESSAGES = 200
POISON_EVERY = 10  # 10% poison
WORKERS = 8
BACKOFF = BackoffPolicy(delay=2, max_delay=4)
DEADLINE = 60.0  # seconds; the race normally ends in a few


def test_concurrent_rejects_with_backoff_never_share_and_move_once(storage, project, clock):
    storage.queues.create(project, "work", {"_dead_letter_queue": "dlq"})
    posted: list[str] = []
    for start in range(0, MESSAGES, 20):
        posted += storage.messages.post(
            project, "work",
            [new_message({"n": n}) for n in range(start, start + 20)], client_id="producer")
    poison = {message_id for n, message_id in enumerate(posted) if n % POISON_EVERY == 0}
    good = set(posted) - poison
    terminal = moves.rejected("dlq", None, "ValueError: poison")

    lock = threading.Lock()
    holders: dict[str, str] = {}
    double_holds: list[tuple[str, str, str]] = []
    deleted: Counter[str] = Counter()
    errors: list[BaseException] = []
    failed = threading.Event()
    deadline = time.monotonic() + DEADLINE

    def forget(message_id: str) -> None:
        with lock:
            holders.pop(message_id, None)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        client_id = f"worker-{seed}"
        while time.monotonic() < deadline and not failed.is_set():
            claimed = storage.claims.create(
                project, "work", ttl=300, grace=60, limit=rng.randint(3, 10),
                client_id=client_id, rules=DeliveryRules(backoff=BACKOFF))
            if claimed is None:
                if storage.queues.stats(project, "work").total == 0:
                    return
                clock.advance(0.25)  # let backed-off messages come back
                time.sleep(0.001)
                continue
            with lock:
                for message in claimed.messages:
                    if message.id in holders:
                        double_holds.append((message.id, holders[message.id], claimed.id))
                    holders[message.id] = claimed.id
            for message in claimed.messages:
                time.sleep(rng.random() * 0.001)
                forget(message.id)  # just before the storage lets go
                if message.id in good:
                    storage.messages.delete(project, "work", message.id, claim_id=claimed.id,
                                            client_id=client_id)
                    with lock:
                        deleted[message.id] += 1
                elif message.claim_count < 2:
                    storage.messages.reject(project, "work", message.id, claim_id=claimed.id,
                                            client_id=client_id, description="retry me",
                                            retry_after=None)
                else:
                    assert storage.messages.move(project, "work", [message.id], terminal,
                                                 claim_id=claimed.id,
                                                 client_id=client_id) == [message.id]
        if not failed.is_set():
            raise TimeoutError("the reject race did not finish in time")

    def run(seed: int) -> None:
        try:
            worker(seed)
        except BaseException as error:
            errors.append(error)
            failed.set()

    threads = [threading.Thread(target=run, args=(seed,)) for seed in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert double_holds == []
    assert deleted == Counter(good)
    stats = storage.queues.stats(project, "work")
    assert (stats.free, stats.claimed, stats.delayed) == (0, 0, 0)
    in_dlq = storage.messages.list(project, "dlq", limit=MESSAGES, echo=True)
    assert sorted(m.id for m in in_dlq) == sorted(poison)
    assert all(m.claim_count == 2 and [h["reason"] for h in m.history] == ["rejected"]
               for m in in_dlq)

    logged = events_of(storage, project)
    rejected = Counter(e.message_id for e in logged if e.kind == events.REJECTED)
    assert rejected == Counter(poison)
    moved = Counter(e.message_id for e in logged if e.kind == events.DEAD_LETTERED)
    assert moved == Counter(poison)
    claimed_per_id = Counter(e.message_id for e in logged if e.kind == events.CLAIMED)
    assert all(claimed_per_id[m] == 2 for m in poison)
    assert all(claimed_per_id[m] == 1 for m in good)
