"""Plausible synthetic event histories, for the benchmark, the tests and demos.

Messages are posted to a few queues, claimed by a few consumers, succeed,
fail (released or let expire), are dead lettered after ``max_claim_count``
claims on queues that have a dead letter queue, popped, or expire unclaimed.
Poison bodies always fail, so their fingerprints top the failure table.
The events of one message are yielded together, in time order; different
messages interleave in time but not in the log, which the analytics never
rely on (they order by time within a message).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from zq import events
from zq.events import (
    CLAIMED,
    DEAD_LETTERED,
    DELETED,
    EXPIRED,
    POSTED,
    PURGED,
    REDRIVEN,
    REJECTED,
    RELEASED,
    RENEWED,
    SAMPLE_CHARS,
    fingerprint,
)
from zq.storage.records import Event

POISON_BODIES = (
    {"job": "resize", "image": "corrupt.png"},
    {"job": "charge", "card": None},
    {"job": "email", "to": "nobody@invalid"},
)


@dataclass(frozen=True)
class Shape:
    """The knobs of a synthetic workload."""

    projects: int = 2
    queues_per_project: int = 3  # every third queue has no dead letter queue
    consumers: int = 6
    max_claim_count: int = 3
    poison_share: float = 0.05
    fail_share: float = 0.25  # chance that a claim of a healthy message fails
    days: int = 3
    start: float = 1_700_006_400.0  # 2023-11-15T00:00:00Z
    claim_ttl: int = 60
    message_ttl: int = 3600
    # The poison workflow (off by default: the benchmark's workload stays
    # the one it was measured with). reject_share: chance that a failed
    # delivery is a retry reject (with a description), and that a poison
    # message's failed delivery on a queue with a dead letter queue is a
    # terminal reject; redrive_share: chance that a dead letter is redriven
    # back (at most twice; half the poison is fixed by then);
    # dead_letter_expired: queues with a dead letter queue dead letter
    # messages whose ttl runs out (reason "expired").
    reject_share: float = 0.0
    redrive_share: float = 0.0
    dead_letter_expired: bool = False


# The poison workflow switched on: the histories the tests recount.
POISON_WORKFLOW = Shape(reject_share=0.3, redrive_share=0.4, dead_letter_expired=True)


def dead_letter_queue(queue: str) -> str:
    """The name of a synthetic queue's dead letter queue."""
    return f"{queue}-dlq"


def has_dead_letter_queue(queue_index: int) -> bool:
    return queue_index % 3 != 2


def synthetic_events(count: int, *, seed: int = 0, shape: Shape | None = None) -> Iterator[Event]:
    """Exactly ``count`` events (the last message's history may be cut short)."""
    shape = shape or Shape()
    rng = random.Random(seed)
    cursors = itertools.count(1)
    made = 0
    number = 0
    while True:
        number += 1
        for event in _message_history(rng, shape, number, cursors):
            made += 1
            yield event
            if made >= count:
                return


def _message_history(rng: random.Random, shape: Shape, number: int,
                     cursors: Iterator[int]) -> Iterator[Event]:
    # Each event takes the next cursor when it is made, which is when it is
    # yielded (the generators are lazy): the log's order, without building
    # every event a second time to number it.
    project = f"project-{rng.randrange(shape.projects)}"
    queue_index = rng.randrange(shape.queues_per_project)
    queue = f"queue-{queue_index}"
    message_id = f"m{number:09d}"
    poison = rng.random() < shape.poison_share
    body_value = rng.choice(POISON_BODIES) if poison else {"job": "work", "n": number}
    body = orjson.dumps(body_value, option=orjson.OPT_SORT_KEYS).decode()
    print_ = fingerprint(body)
    t = shape.start + rng.random() * shape.days * 86400
    dlq = has_dead_letter_queue(queue_index)
    target = dead_letter_queue(queue)
    redrives = 0

    def event(kind: str, **fields) -> Event:
        fields.setdefault("queue", queue)
        return Event(cursor=str(next(cursors)), time=t, project=project, kind=kind,
                     message_id=message_id, **fields)

    def dead_letter(count: int, reason: str, **fields) -> Iterator[Event]:
        # Into the dead letter queue; then redriven (the poison workflow),
        # drained by an operator, or left to expire there.
        nonlocal t, poison, redrives
        yield event(DEAD_LETTERED, claim_count=count,
                    detail={"to": target, "reason": reason, "fingerprint": print_,
                            "sample": body[: SAMPLE_CHARS], **fields.pop("detail", {})},
                    **fields)
        if shape.redrive_share and redrives < 2 and rng.random() < shape.redrive_share:
            redrives += 1
            t += rng.expovariate(1 / 600)
            yield event(REDRIVEN, queue=target, claim_count=count,
                        detail={"to": queue, "reason": "redriven", "fingerprint": print_,
                                "sample": body[: SAMPLE_CHARS]})
            if poison and rng.random() < 0.5:
                poison = False  # the consumer's bug was fixed before the redrive
            yield from attempts(0)
            return
        if rng.random() < 0.5:
            t += rng.expovariate(1 / 600)
            claim_id = f"c{number:09d}-dlq" + (f"{redrives}" if redrives else "")
            yield event(CLAIMED, queue=target, claim_id=claim_id, client_id="operator",
                        claim_count=count + 1)
            t += 1.0
            yield event(DELETED, queue=target, claim_id=claim_id, client_id="operator",
                        claim_count=count + 1)
        else:
            t += shape.message_ttl
            yield event(EXPIRED, queue=target, claim_count=count)

    def expire(count: int) -> Iterator[Event]:
        if dlq and shape.dead_letter_expired:
            yield from dead_letter(count, "expired")
        else:
            yield event(EXPIRED, claim_count=count)

    def attempts(count: int) -> Iterator[Event]:
        nonlocal t
        while True:
            t += rng.expovariate(1 / 20)
            if dlq and count >= shape.max_claim_count:
                yield from dead_letter(count, "max_claim_count")
                return
            if count >= 6:
                t += shape.message_ttl
                yield from expire(count)
                return
            count += 1
            consumer = _consumer(rng, shape)
            claim_id = f"c{number:09d}-{redrives}-{count}" if redrives else f"c{number:09d}-{count}"
            yield event(CLAIMED, claim_id=claim_id, client_id=consumer, claim_count=count)
            if rng.random() < 0.1:
                t += shape.claim_ttl / 2
                yield event(RENEWED, claim_id=claim_id, client_id=consumer, claim_count=count)
            t += rng.expovariate(1 / 10)
            if not poison and rng.random() >= shape.fail_share:
                yield event(DELETED, claim_id=claim_id, client_id=consumer, claim_count=count)
                return
            described = _description(body_value, poison)
            if poison and dlq and shape.reject_share and rng.random() < shape.reject_share:
                # The consumer knows this body can never work: a terminal reject.
                yield from dead_letter(count, "rejected", claim_id=claim_id, client_id=consumer,
                                       detail={} if described is None
                                       else {"description": described})
                return
            if shape.reject_share and rng.random() < shape.reject_share:
                retry_after = rng.choice((None, 5, 30))
                yield event(REJECTED, claim_id=claim_id, client_id=consumer, claim_count=count,
                            detail={"description": described, "retry_after": retry_after})
            elif rng.random() < 0.5:
                yield event(RELEASED, claim_id=claim_id, client_id=consumer, claim_count=count)
            else:
                t += shape.claim_ttl
                if rng.random() < 0.5:  # the garbage collector noticed the dead claim
                    yield Event(cursor=str(next(cursors)), time=t, project=project, queue=queue,
                                kind=EXPIRED, claim_id=claim_id, client_id=consumer,
                                detail={"target": "claim", "messages": 1})

    yield event(POSTED, client_id="producer",
                detail={"ttl": shape.message_ttl, "delay": 0, "fingerprint": print_,
                        "size": len(body.encode())})
    if rng.random() < 0.002:
        # An operator purges the queue while it holds just this message, so
        # every queue's totals still balance.
        t += rng.expovariate(1 / 30)
        yield Event(cursor=str(next(cursors)), time=t, project=project, queue=queue, kind=PURGED,
                    detail={"messages": 1})
        return
    fate = rng.random()
    if fate < 0.03:
        t += shape.message_ttl
        yield from expire(0)
        return
    if fate < 0.08:
        t += rng.expovariate(1 / 5)
        yield event(DELETED, client_id=_consumer(rng, shape), claim_count=1,
                    detail={"pop": True})
        return
    yield from attempts(0)


# What a consumer says when it rejects a body (None: it said nothing).
_DESCRIPTIONS = {
    "resize": "PIL.UnidentifiedImageError: cannot identify image file",
    "charge": "KeyError: 'card'",
    "email": "SMTPRecipientsRefused: nobody@invalid",
}


def _description(body: dict, poison: bool) -> str | None:
    if poison:
        return _DESCRIPTIONS.get(str(body.get("job")))
    return "TimeoutError: upstream did not answer" if body.get("n", 0) % 4 else None


def _consumer(rng: random.Random, shape: Shape) -> str:
    # A Client-ID is a UUID (the API refuses anything else); consumer n is
    # 00000000-0000-4000-8000-00000000000n, so tables stay readable.
    return f"00000000-0000-4000-8000-{rng.randrange(shape.consumers):012d}"


ADVISOR_PROJECT = "advisor"
ADVISOR_WORKER = "00000000-0000-4000-8000-0000000000a0"


def advisor_events(start: float = 1_700_200_000.0) -> list[Event]:
    """Hand-made histories whose retry advice and poison signatures are known.

    Queue ``retry-a`` (dead letters after 5 claims; a claim every 10 s):
    30 messages succeed at attempt 1, 10 at attempt 2 (recovered after
    10 s), 5 at attempt 4 (after 30 s); 25 poison messages are dead
    lettered after 5 claims. With no false dead letter allowed the advice is
    ``_max_claim_count`` 4 (3 would dead letter the 5 late successes), and
    the cheapest backoff whose three waits reach 30 s is fixed 10 s (ties
    with linear 5 s: 5 + 10 + 15; fixed comes first). Queue ``retry-b``
    (dead letters after 3): 20 succeed at 1, 4 at 3, 22 are dead lettered
    at 3: at a candidate of 4 those 22 are unknown (censored), never
    counted as saved or failed.

    Poison bodies come in two shapes (with and without ``order_id``); some
    failures carry a description (``rejected`` events of the poison
    workflow, and dead letter moves); one dead letter has an encrypted
    sample and one a sample cut at the sample limit: neither has a shape.
    """
    made: list[Event] = []
    number = 0

    def history(queue: str, claims: int, ends: str, body: dict, *,
                description: str | None = None, sample: str | None = None) -> None:
        nonlocal number
        number += 1
        message_id = f"adv{number:05d}"
        text = orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()
        t = start + number * 1000.0

        def event(offset: float, kind: str, **fields) -> None:
            made.append(Event(cursor="", time=t + offset, project=ADVISOR_PROJECT,
                                queue=fields.pop("queue", queue), kind=kind,
                                message_id=message_id, **fields))

        event(0, events.POSTED, client_id="producer",
              detail={"ttl": 3600, "delay": 0, "fingerprint": fingerprint(text)})
        for attempt in range(1, claims + 1):
            claim_id = f"{message_id}-{attempt}"
            at = 10.0 * attempt
            event(at, events.CLAIMED, claim_id=claim_id, client_id=ADVISOR_WORKER,
                  claim_count=attempt)
            if attempt == claims and ends == "deleted":
                event(at + 1, events.DELETED, claim_id=claim_id, client_id=ADVISOR_WORKER,
                      claim_count=attempt)
            elif description is not None and attempt == claims:
                event(at + 1, events.REJECTED, claim_id=claim_id, client_id=ADVISOR_WORKER,
                      claim_count=attempt, detail={"description": description})
            else:
                event(at + 1, events.RELEASED, claim_id=claim_id, client_id=ADVISOR_WORKER,
                      claim_count=attempt)
        if ends == "dead_lettered":
            detail = {"to": f"{queue}-dlq", "reason": "max_claim_count",
                      "fingerprint": fingerprint(text),
                      "sample": text[: events.SAMPLE_CHARS] if sample is None else sample}
            if description is not None:
                detail["description"] = description
            event(10.0 * claims + 5, events.DEAD_LETTERED, claim_count=claims, detail=detail)

    good = {"order_id": 1, "items": [{"sku": "a", "qty": 1}]}
    for _ in range(30):
        history("retry-a", 1, "deleted", good)
    for _ in range(10):
        history("retry-a", 2, "deleted", good)
    for _ in range(5):
        history("retry-a", 4, "deleted", good)
    for index in range(25):
        no_order = {"items": [{"sku": f"s{index}", "qty": index}]}
        history("retry-a", 5, "dead_lettered", no_order,
                description="order_id is missing" if index < 10 else None)
    for _ in range(20):
        history("retry-b", 1, "deleted", good)
    for _ in range(4):
        history("retry-b", 3, "deleted", good)
    for index in range(20):
        history("retry-b", 3, "dead_lettered", {"order_id": str(index), "items": []})
    history("retry-b", 3, "dead_lettered", good, sample="zqe1:k1:AAAA")
    history("retry-b", 3, "dead_lettered", {"blob": "x" * events.SAMPLE_CHARS})
    return made


WORKFLOW_PROJECT = "workflow"


def poison_workflow_events(start: float = 1_700_300_000.0) -> list[Event]:
    """Hand-made histories of the poison workflow whose tables are known.

    Queue ``orders`` (dead letter queue ``orders-dlq``, 3 claims, expiry
    dead lettered); 15 messages:

    - A1-A6: claimed, terminal reject "bad sku"; redriven; A1-A4 then
      succeed, A5-A6 are rejected (terminal, "bad sku") again.
    - B1-B4: two retry rejects "timeout", then dead lettered on the next
      claim (max_claim_count). B1 and B2 are redriven automatically (a
      breaker's close, reason auto_redriven): B1 is rejected
      ("timeout", retry) once more and then deleted; B2's three claims
      lapse and it is dead lettered again, then redriven a second time and
      not claimed since.
    - C1-C3: expire unclaimed and are dead lettered (reason expired);
      redriven: C1 is not claimed since, C2 expires (the queue no longer
      dead letters expiry), C3 is released.
    - D1-D2: a retry reject without a description, then deleted.

    Known answers: rejections in ``orders``: "timeout" 9 (9 retries, 4
    messages), "bad sku" 8 (8 terminal, 6 messages), "(none)" 2; dead
    letters out of ``orders`` by reason: rejected 8, max_claim_count 5,
    expired 3; redrive outcomes (orders-dlq -> orders): 12 redrives of 11
    messages, succeeded 5, failed_again 1, died_again 3, expired 1, pending
    2, automatic 2; present: 3 in ``orders`` (B2, C1, C3), 4 in ``orders-dlq`` (A5, A6,
    B3, B4).
    """
    queue, dlq, worker = "orders", "orders-dlq", ADVISOR_WORKER
    out: list[Event] = []

    def history(number: int, message_id: str, steps: list[tuple]) -> None:
        t = start + number * 1000.0
        claims = 0
        claim_id = None
        for offset, (kind, *args) in enumerate(steps):
            at = t + 10.0 * offset
            detail: dict = {}
            fields: dict = {}
            where = queue
            if kind == events.POSTED:
                detail = {"ttl": 3600, "delay": 0, "fingerprint": f"fp-{message_id}"}
            elif kind == events.CLAIMED:
                claims += 1
                claim_id = f"{message_id}-c{offset}"
                fields = {"claim_id": claim_id, "client_id": worker}
            elif kind in (events.RELEASED, events.DELETED):
                fields = {"claim_id": claim_id, "client_id": worker}
            elif kind == events.REJECTED:
                fields = {"claim_id": claim_id, "client_id": worker}
                detail = {"description": args[0] if args else None, "retry_after": 30}
            elif kind == events.DEAD_LETTERED:
                reason = args[0]
                detail = {"to": dlq, "reason": reason, "fingerprint": f"fp-{message_id}",
                          "sample": "{}"}
                if reason == "rejected":
                    fields = {"claim_id": claim_id, "client_id": worker}
                    detail["description"] = args[1]
            elif kind == events.REDRIVEN:
                where = dlq
                detail = {"to": queue, "reason": args[0] if args else "redriven",
                          "fingerprint": f"fp-{message_id}", "sample": "{}"}
            out.append(Event(cursor="", time=at, project=WORKFLOW_PROJECT, queue=where,
                             kind=kind, message_id=message_id, claim_count=claims,
                             detail=detail, **fields))
            if kind == events.REDRIVEN:
                claims = 0  # a redrive starts the claims over

    posted, claimed = (events.POSTED,), (events.CLAIMED,)
    terminal = (events.DEAD_LETTERED, "rejected", "bad sku")
    redriven, deleted = (events.REDRIVEN,), (events.DELETED,)
    automatic = (events.REDRIVEN, "auto_redriven")  # a breaker's close sent it back
    timeout = (events.REJECTED, "timeout")
    exhausted = (events.DEAD_LETTERED, "max_claim_count")
    expired = (events.DEAD_LETTERED, "expired")
    histories = {
        **{f"A{i}": [posted, claimed, terminal, redriven, claimed, deleted] for i in range(1, 5)},
        **{f"A{i}": [posted, claimed, terminal, redriven, claimed, terminal] for i in (5, 6)},
        "B1": [posted, claimed, timeout, claimed, timeout, claimed, exhausted, automatic,
               claimed, timeout, claimed, deleted],
        "B2": [posted, claimed, timeout, claimed, timeout, claimed, exhausted, automatic,
               claimed, claimed, claimed, exhausted, redriven],
        **{f"B{i}": [posted, claimed, timeout, claimed, timeout, claimed, exhausted]
           for i in (3, 4)},
        "C1": [posted, expired, redriven],
        "C2": [posted, expired, redriven, (events.EXPIRED,)],
        "C3": [posted, expired, redriven, claimed, (events.RELEASED,)],
        **{f"D{i}": [posted, claimed, (events.REJECTED,), claimed, deleted] for i in (1, 2)},
    }
    for number, (message_id, steps) in enumerate(histories.items()):
        history(number, message_id, steps)
    return out
