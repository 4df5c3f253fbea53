"""Consumers, poison, backoff and two racing redrives of the dead letter queue.

Eight consumers work a queue with 10% poison and backoff on. A poison
message fails twice (a retry reject, then a terminal reject into the dead
letter queue) until it has been redriven once, as if the fix were deployed
when the operator redrives. Meanwhile two redrives walk the dead letter
queue page after page, racing each other. Whatever the interleaving:
every message ends in exactly one place (deleted once), no message is ever
held by two live claims, and no dead letter is redriven twice by the
racing calls (each redrive follows its own dead lettering).
"""

from __future__ import annotations

import json
import threading
from collections import Counter, defaultdict

import pytest

from tests.contract.helpers import events_of
from zq import events as kinds
from zq.config import Limits
from zq.errors import ClaimMismatch
from zq.pooling import SingleBackend
from zq.service import QueueService

pytestmark = pytest.mark.slow

MESSAGES = 200
CONSUMERS = 8
REDRIVERS = 2
POLICY = {"_max_claim_count": 5, "_dead_letter_queue": "dlq", "_retry_delay": 1}


def test_consumers_and_racing_redrives_keep_every_message_in_one_place(
        storage, project, clock):
    service = QueueService(Limits(), SingleBackend(storage))
    service.create_queue(project, "work", POLICY)
    bodies = [{"n": n, "poison": n % 10 == 0} for n in range(MESSAGES)]
    posted = []
    for start in range(0, MESSAGES, 20):
        posted += service.post_messages(
            project, "work", {"messages": [{"body": b} for b in bodies[start:start + 20]]},
            client_id=None, body_size=10)
    poison = {mid for mid, body in zip(posted, bodies, strict=True) if body["poison"]}

    lock = threading.Lock()
    holders: dict[str, tuple[str, float]] = {}  # message -> (claim id, claim expiry)
    deleted: Counter[str] = Counter()
    redriven_by_calls: Counter[str] = Counter()
    errors: list[BaseException] = []
    done = threading.Event()
    go = threading.Barrier(CONSUMERS + REDRIVERS)

    def hold(claim) -> None:
        with lock:
            now = clock.now()
            for message in claim.messages:
                held = holders.get(message.id)
                assert held is None or held[1] <= now, (
                    f"{message.id} is held by live claims {held[0]} and {claim.id}")
                holders[message.id] = (claim.id, claim.expires)

    def let_go(message_id: str) -> None:
        with lock:
            holders.pop(message_id, None)

    def consumer(number: int) -> None:
        client = f"00000000-0000-4000-8000-{number:012d}"
        try:
            go.wait()
            while not done.is_set():
                claim = service.claim(project, "work", {"ttl": 60, "grace": 60}, limit=5,
                                      client_id=client)
                if claim is None:
                    clock.advance(0.05)  # let backoff pass without sleeping
                    continue
                hold(claim)
                for message in claim.messages:
                    failing = message.id in poison and message.redrive_count == 0
                    let_go(message.id)
                    try:
                        if not failing:
                            service.delete_message(project, "work", message.id,
                                                   claim_id=claim.id, client_id=client)
                            with lock:
                                deleted[message.id] += 1
                                if sum(deleted.values()) >= MESSAGES:
                                    done.set()
                        elif message.claim_count < 2:
                            service.reject_message(
                                project, "work", message.id,
                                {"description": "ValueError: bad", "retry_after": None},
                                claim_id=claim.id, client_id=client)
                        else:
                            service.reject_message(
                                project, "work", message.id, {"description": "ValueError"},
                                claim_id=claim.id, client_id=client)
                    except ClaimMismatch:
                        pass  # the claim lapsed under a slow thread: redelivered elsewhere
        except BaseException as exc:
            errors.append(exc)
            done.set()

    def redriver(number: int) -> None:
        try:
            go.wait()
            marker = None
            while not done.is_set():
                body = {"limit": 7, "marker": marker}
                result = service.redrive(project, "dlq", body, client_id=f"redriver-{number}")
                marker = result.next
                assert result.moved <= result.matched <= 7
                with lock:
                    redriven_by_calls.update({"moved": result.moved})
        except BaseException as exc:
            errors.append(exc)
            done.set()

    threads = [threading.Thread(target=consumer, args=(n,)) for n in range(CONSUMERS)]
    threads += [threading.Thread(target=redriver, args=(n,)) for n in range(REDRIVERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads), "the workload did not finish"
    assert not errors, errors

    # Every message ends in exactly one place: deleted once, nowhere alive.
    assert deleted == Counter(posted)
    for queue in ("work", "dlq"):
        assert storage.queues.stats(project, queue).total == 0
    # Each dead lettering is followed by exactly one redrive, never two:
    # per message the moves alternate dead_lettered, redriven.
    log = defaultdict(list)
    for event in events_of(storage, project):
        if event.kind in (kinds.DEAD_LETTERED, kinds.REDRIVEN, kinds.DELETED):
            log[event.message_id].append(event.kind)
    # Without transactions (MongoDB standalone, mongomock) a change's events
    # are written right after it (docs/mongo.md), so a consumer's delete of a
    # message just redriven can be logged before the redrive: there the log
    # holds the right events per message, in an order not promised.
    in_order = getattr(storage, "transactions", True)
    for message_id in posted:
        moves_of = [k for k in log[message_id] if k != kinds.DELETED]
        expected = [kinds.DEAD_LETTERED, kinds.REDRIVEN] if message_id in poison else []
        if in_order:
            assert moves_of == expected, (message_id, moves_of)
            assert log[message_id][-1] == kinds.DELETED
        else:
            assert sorted(moves_of) == sorted(expected), (message_id, moves_of)
        assert log[message_id].count(kinds.DELETED) == 1
    assert redriven_by_calls["moved"] == len(poison)
    redriven = [e for e in events_of(storage, project, kinds.REDRIVEN)]
    assert {e.client_id for e in redriven} <= {"redriver-0", "redriver-1"}
    for event in redriven:
        assert json.loads(json.dumps(event.detail))["to"] == "work"
