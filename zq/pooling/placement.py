"""Where a new queue goes: the pool rule of dead letter queues, then weights.

Pure decisions over what the catalog read; no I/O. A new queue is pulled to
a pool by *requirements* (its dead letter queue lives there, a queue that
dead letters into it lives there, ...). One required pool wins; two
different ones are a DeadLetterConflict naming them. Without requirements
the queue goes to one of its *candidates* (its flavor's pools, or the
flavor-less pools) chosen at random, weighted by ``weight``; a pool of
weight 0 takes no new queues.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from zq.errors import DeadLetterConflict, NoPoolAvailable


@dataclass(frozen=True, slots=True)
class Candidate:
    """A pool a new queue may go to, and its share of new queues."""

    pool: str
    weight: int


@dataclass(frozen=True, slots=True)
class Requirement:
    """A pool the new queue must share, and why (shown in a conflict)."""

    pool: str
    reason: str


def colocation_conflict(queue: str, own: str, target: str, target_pool: str) -> DeadLetterConflict:
    """The rule a queue and its dead letter queue share a pool, broken: its one text."""
    return DeadLetterConflict(
        f"Dead letter queue {target!r} lives on pool {target_pool!r} but queue "
        f"{queue!r} lives on pool {own!r}; a queue and its dead letter queue must "
        "share a pool."
    )


def weighted_choice(candidates: Sequence[Candidate], rng: random.Random) -> str | None:
    """One pool at random, each with probability weight / total; None when all weigh 0."""
    eligible = [c for c in candidates if c.weight > 0]
    if not eligible:
        return None
    point = rng.random() * sum(c.weight for c in eligible)
    for candidate in eligible:
        point -= candidate.weight
        if point < 0:
            return candidate.pool
    return eligible[-1].pool  # rounding at the very top of the range


def decide(
    queue: str,
    *,
    flavor: str | None,
    candidates: Sequence[Candidate],
    requirements: Sequence[Requirement],
    rng: random.Random,
) -> str:
    """The pool a new queue goes to.

    With requirements, their one pool; a queue with a ``flavor`` must then
    find that pool among its flavor's (a dead letter queue created for its
    source has no flavor and simply follows it).
    """
    required = sorted({r.pool for r in requirements})
    if len(required) > 1:
        reasons = "; ".join(r.reason for r in requirements)
        raise DeadLetterConflict(
            f"Queue {queue!r} cannot be placed: {reasons}. A queue and its dead "
            f"letter queue must share a pool, and pools {required} differ."
        )
    if required:
        pool = required[0]
        if flavor is not None and pool not in {c.pool for c in candidates}:
            raise DeadLetterConflict(
                f"Queue {queue!r} must be placed on pool {pool!r} because "
                f"{requirements[0].reason}, but pool {pool!r} is not in flavor {flavor!r}."
            )
        return pool
    chosen = weighted_choice(candidates, rng)
    if chosen is None:
        which = f"of flavor {flavor!r}" if flavor is not None else "without a flavor"
        raise NoPoolAvailable(
            f"No pool {which} can take queue {queue!r}: register one with a positive "
            "weight (PUT /v2/pools/{name})."
        )
    return chosen
