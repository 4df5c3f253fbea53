"""Which changes wake waiting claims, and how a queue is named in a wake-up.

A claim that waits (``POST .../claims?wait=S``, zq.storage.wakeups) is
woken across workers and servers by the backend itself: the Redis scripts
PUBLISH, PostgreSQL transactions NOTIFY, MongoDB's change stream reports.
What wakes a queue is read from the events a change records in its own
atomic step, so every driver applies one rule and a wake-up is sent by the
same script or transaction as the change (a rollback sends none):

- a ``posted``, ``released`` or ``rejected`` (retry) event wakes its
  queue: its message is claimable now, or at a moment the waiters must
  learn (a ``delay``, a backoff), so they try once and set their timer;
  so does a ``breaker`` event (zq.poison.breaker): a breaker that closes
  hands out messages again;
- an event whose detail names a destination (``to``: a dead letter move, a
  terminal reject, a redrive, an expiry move) wakes that queue.

A claim's expiry wakes nobody here: it is a moment the waiters already know
(``Wakeups.earliest_claimable``). One change wakes each queue once,
whatever the number of its messages (a post of 10 is one wake-up).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zq import events

# Event kinds that may make a message of their own queue claimable.
WAKING_KINDS = frozenset({events.POSTED, events.RELEASED, events.REJECTED, events.BREAKER})


def woken_queue(kind: str, queue: str, detail: Mapping[str, Any] | None) -> str | None:
    """The queue an event of ``kind`` on ``queue`` wakes, or None."""
    if kind in WAKING_KINDS:
        return queue
    to = (detail or {}).get(events.TO)
    return to if isinstance(to, str) else None


def woken_queues(rows: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The distinct (project, queue) pairs a change's event rows wake, in first-seen order.

    Each row has ``kind``, ``project``, ``queue`` and ``detail`` (a mapping).
    """
    found: dict[tuple[str, str], None] = {}
    for row in rows:
        queue = woken_queue(row["kind"], row["queue"], row.get("detail"))
        if queue is not None:
            found[(row["project"], queue)] = None
    return list(found)


def wake_name(project: str, queue: str) -> str:
    """The queue's name in a wake-up: ``<bytes of project>:<project><queue>``.

    Length-prefixed as the Redis key layout names queues (``enc`` in the
    scripts' library), so no project id or queue name can be read as another.
    """
    return f"{len(project.encode())}:{project}{queue}"


def parse_wake_name(name: str) -> tuple[str, str] | None:
    """(project, queue) of a ``wake_name``; None when ``name`` is not one."""
    size, colon, rest = name.partition(":")
    if not colon or not size.isdigit():
        return None
    try:
        raw = rest.encode()
        length = int(size)
        if length > len(raw):
            return None
        return raw[:length].decode(), raw[length:].decode()
    except UnicodeError:  # not text, or a length that cuts a character
        return None
