"""Threads racing to move the same messages with MessageController.move.

Four threads redrive the same dead letters (each its own random chunks of
the same ids) while two consumers claim from the dead letter queue and
reject what they hold into a third queue. Whatever the interleaving, every
message moves exactly once: one event, in exactly one queue afterwards,
returned by exactly one call.
"""

from __future__ import annotations

import random
import threading
from collections import Counter

import pytest

from tests.contract.helpers import events_of, new_message
from zq import events
from zq.poison import moves

pytestmark = pytest.mark.slow

MESSAGES = 200
REDRIVERS = 4
CONSUMERS = 2


def test_racing_moves_move_each_message_once(storage, project):
    posted: list[str] = []
    for start in range(0, MESSAGES, 20):
        posted += storage.messages.post(
            project, "dlq", [new_message({"n": n}) for n in range(start, start + 20)],
            client_id="producer")
    lock = threading.Lock()
    returned: Counter[str] = Counter()
    errors: list[BaseException] = []
    go = threading.Barrier(REDRIVERS + CONSUMERS)

    def redriver(seed: int) -> None:
        try:
            order = list(posted)
            random.Random(seed).shuffle(order)
            go.wait()
            for start in range(0, len(order), 20):
                moved = storage.messages.move(project, "dlq", order[start:start + 20],
                                              moves.redriven("q", 600), client_id="redriver")
                with lock:
                    returned.update(moved)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    def consumer() -> None:
        try:
            go.wait()
            for _ in range(MESSAGES // 10):
                claim = storage.claims.create(project, "dlq", ttl=60, grace=60, limit=5,
                                              client_id="consumer")
                if claim is None:
                    continue
                moved = storage.messages.move(
                    project, "dlq", [m.id for m in claim.messages],
                    moves.rejected("final", None, "no"), claim_id=claim.id,
                    client_id="consumer")
                assert moved == [m.id for m in claim.messages]
                with lock:
                    returned.update(moved)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=redriver, args=(seed,)) for seed in range(REDRIVERS)]
    threads += [threading.Thread(target=consumer) for _ in range(CONSUMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert not any(thread.is_alive() for thread in threads)

    assert returned == Counter(posted), "a message was moved twice, or never"
    found = {
        queue: {m.id for m in storage.messages.list(
            project, queue, echo=True, include_claimed=True, limit=MESSAGES)}
        for queue in ("dlq", "q", "final")
    }
    assert found["dlq"] == set()
    assert found["q"] | found["final"] == set(posted)
    assert found["q"] & found["final"] == set()
    moved_events = Counter(
        e.message_id for e in events_of(storage, project)
        if e.kind in (events.REDRIVEN, events.DEAD_LETTERED))
    assert moved_events == Counter(posted)
    for message in storage.messages.get_many(project, "q", sorted(found["q"])):
        assert (message.redrive_count, message.claim_count) == (1, 0)
