"""Eight consumers, 10% poison, and the audit of every message: on a cluster while it changes.

``run`` posts ``messages`` (and, with ``until``, keeps posting while
``until`` is not set) into one queue with a dead letter policy; eight
workers claim batches, delete the good messages by claim id and release
the poison ones until the queue is empty. ``Tally.problems`` lists what
broke conservation: a message held by two live claims, a good message not
deleted exactly once, a poison message not dead lettered exactly once
after exactly ``MAX_CLAIMS`` deliveries, a count of events that disagrees.
Shared by tests/drivers/redis_cluster/test_under_load.py and
benchmarks/redis_cluster.py.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.contract.helpers import events_of, new_message
from zq import events
from zq.errors import StorageUnavailable
from zq.poison.dead_letter import policy_from_metadata
from zq.storage.base import Storage
from zq.storage.delivery_rules import DeliveryRules

POISON_EVERY = 10  # 10% poison
MAX_CLAIMS = 3
WORKERS = 8
METADATA = {"_max_claim_count": MAX_CLAIMS, "_dead_letter_queue": "dlq"}


@dataclass
class Tally:
    posted: list[str] = field(default_factory=list)
    poison: set[str] = field(default_factory=set)
    deliveries: Counter[str] = field(default_factory=Counter)
    deleted: Counter[str] = field(default_factory=Counter)
    double_holds: list[tuple[str, str, str]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    unavailable: int = 0  # 503s: retried by the worker, counted here
    lock: threading.Lock = field(default_factory=threading.Lock)

    def problems(self, storage: Storage, project: str) -> list[str]:
        found = [f"error: {error!r}" for error in self.errors]
        good = set(self.posted) - self.poison
        if self.double_holds:
            found.append(f"held by two live claims: {self.double_holds[:5]}")
        if set(self.deleted) != good or any(n != 1 for n in self.deleted.values()):
            found.append(f"good messages not deleted exactly once: "
                         f"{len(good - set(self.deleted))} missing, "
                         f"{sum(n > 1 for n in self.deleted.values())} twice")
        wrong = {m: self.deliveries[m] for m in self.poison if self.deliveries[m] != MAX_CLAIMS}
        if wrong:
            found.append(f"poison not delivered {MAX_CLAIMS} times: {list(wrong.items())[:5]}")
        stats = storage.queues.stats(project, "work")
        if (stats.free, stats.claimed) != (0, 0):
            found.append(f"left in the queue: {stats}")
        in_dlq = storage.messages.list(project, "dlq", limit=len(self.posted) + 10, echo=True)
        if sorted(m.id for m in in_dlq) != sorted(self.poison):
            found.append(f"dead letter queue holds {len(in_dlq)}, poison {len(self.poison)}")
        logged = events_of(storage, project)
        posted = Counter(e.message_id for e in logged if e.kind == events.POSTED)
        if posted != Counter(self.posted):
            found.append("posted events disagree with the acknowledged posts")
        claimed = Counter(e.message_id for e in logged if e.kind == events.CLAIMED)
        if claimed != self.deliveries:
            found.append("claimed events disagree with the deliveries")
        moved = Counter(e.message_id for e in logged if e.kind == events.DEAD_LETTERED)
        if moved != Counter(self.poison):
            found.append("dead_lettered events disagree with the poison")
        deleted = Counter(e.message_id for e in logged if e.kind == events.DELETED)
        if deleted != Counter(good):
            found.append("deleted events disagree with the deletes")
        return found


def is_poison(n: int) -> bool:
    """Whether the ``n``-th message posted is poison (its body says ``n``)."""
    return n % POISON_EVERY == 0


def _retrying(tally: Tally, call: Callable[..., object], *args: Any, **kwargs: Any) -> object:
    """``call(*args, **kwargs)``'s answer; a 503 (a call that did not run, or whose
    outcome is unknown: none here, no node dies) is counted and the call made again."""
    while True:
        try:
            return call(*args, **kwargs)
        except StorageUnavailable:
            with tally.lock:
                tally.unavailable += 1
            time.sleep(0.05)


def run(storage: Storage, project: str, *, messages: int = 300,
        until: threading.Event | None = None, deadline: float = 120.0) -> Tally:
    """The workload (module documentation); returns what it saw."""
    tally = Tally()
    storage.queues.create(project, "work", METADATA)
    rules = DeliveryRules(dead_letter=policy_from_metadata(METADATA))
    holders: dict[str, str] = {}
    producing = threading.Event()
    producing.set()
    stop_at = time.monotonic() + deadline

    def post(count: int) -> None:
        start = len(tally.posted)
        ids = _retrying(tally, lambda: storage.messages.post(
            project, "work", [new_message({"n": start + n}) for n in range(count)],
            client_id="producer"))
        with tally.lock:
            for n, message_id in enumerate(ids):  # type: ignore[arg-type]
                if is_poison(start + n):
                    tally.poison.add(message_id)
            tally.posted += ids  # type: ignore[arg-type]

    def producer() -> None:
        try:
            while until is not None and not until.is_set() and time.monotonic() < stop_at:
                post(10)
                time.sleep(0.02)
        except BaseException as error:
            tally.errors.append(error)
        finally:
            producing.clear()

    def forget(message_ids: list[str]) -> None:
        with tally.lock:
            for message_id in message_ids:
                holders.pop(message_id, None)

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        client_id = f"worker-{seed}"
        while time.monotonic() < stop_at:
            claimed = _retrying(tally, lambda: storage.claims.create(
                project, "work", ttl=300, grace=60, limit=rng.randint(5, 10),
                client_id=client_id, rules=rules))
            if claimed is None:
                if not producing.is_set() and _retrying(
                        tally, lambda: storage.queues.stats(project, "work").total) == 0:
                    return
                time.sleep(0.005)
                continue
            taken = [m.id for m in claimed.messages]  # type: ignore[attr-defined]
            # Poison by its body, as a consumer knows it: the producer may
            # not have recorded the post's ids yet.
            poison = {m.id for m in claimed.messages  # type: ignore[attr-defined]
                      if is_poison(json.loads(m.body)["n"])}
            claim_id = claimed.id  # type: ignore[attr-defined]
            with tally.lock:
                for message_id in taken:
                    if message_id in holders:
                        tally.double_holds.append((message_id, holders[message_id], claim_id))
                    holders[message_id] = claim_id
                    tally.deliveries[message_id] += 1
            to_delete = [m for m in taken if m not in poison]
            forget(to_delete)
            if to_delete:
                done = _retrying(tally, storage.messages.delete_many, project, "work",
                                 to_delete, claim_ids=[claim_id], client_id=client_id)
                with tally.lock:
                    tally.deleted.update(done)  # type: ignore[arg-type]
            forget([m for m in taken if m in poison])
            _retrying(tally, storage.claims.release, project, "work", claim_id,
                      client_id=client_id)
        raise TimeoutError("the workload did not finish in time")

    def guarded(target: Callable[[], None]) -> Callable[[], None]:
        def body() -> None:
            try:
                target()
            except BaseException as error:
                tally.errors.append(error)
        return body

    post(messages)
    threads = [threading.Thread(target=producer)]
    threads += [threading.Thread(target=guarded(lambda seed=seed: worker(seed)))
                for seed in range(WORKERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally
