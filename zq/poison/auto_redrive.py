"""Automatic redrive after an outage: which dead letters the breaker's close sends back.

When a queue's breaker closes after an outage (zq.poison.breaker), the
messages dead lettered because of that outage before the breaker tripped
are sent back to the queue, with the one move primitive
(zq.poison.moves.auto_redriven: id, body and history kept, claims start
over). This module decides, without I/O, which messages of the dead
letter queue an outage selects; zq.service.auto_redrive reads the pages,
carries the moves out and clears the breaker's ``redrive_due``.

A dead letter is selected when all of these hold:

- its dead letter entry (zq.poison.redrive.dead_letter_entry: the move that
  brought it into the dead letter queue) is a move out of the breaker's
  queue at a time in ``[tripped_at - window, the redrive]``: dead lettered
  in the window that led to the trip, while the breaker was open (a
  terminal reject is held then, but a claim on another path may still
  have moved it), or after the close by a claim that found it exhausted
  (see below);
- the fingerprint of its ``last_failure`` (the description of its last
  failed delivery) equals the outage's (zq.poison.breaker.
  description_fingerprint of the description the breaker tripped on): a
  message whose last failure was a lapse, or another description (true
  poison), stays;
- it was auto-redriven fewer than ``_auto_redrive_max`` times before (its
  *generation*: the ``auto_redriven`` entries of its history), so a message
  that fails again after its automatic redrive stays in the dead letter
  queue: no loop between two queues.

An outage known by no description (only lapses, or forced open before
any failure) selects nothing: nothing tells its dead letters from poison.

The dead letter move of an exhausted message is lazy: the claim that next
reaches it makes it (zq.poison.dead_letter). A message the outage exhausted
just before the trip is not reached while the breaker is open (claims get
one probe), so it is still in the queue at the close, and the first claims
after the close move it. So the redrive first moves those itself
(``exhausted``: exhausted, not held, last failed with the outage's
fingerprint, under the generation limit) with the dead letter move, and
its walk of the dead letter queue then reaches up to the redrive's own
time (``Outage.through``), not only the close: a claim that moved one a
moment after the close is covered too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from zq.poison import moves, redrive
from zq.poison.breaker import description_fingerprint
from zq.poison.dead_letter import DeadLetterPolicy

if TYPE_CHECKING:  # zq.storage imports zq.validation, which imports this module
    from zq.storage.records import MessageRecord


@dataclass(frozen=True, slots=True)
class Outage:
    """What one close of a breaker may send back, from its ``BreakerState``."""

    queue: str  # the breaker's queue: the messages go back there
    fingerprint: str | None  # of the description the breaker tripped on
    since: float  # tripped_at - window (POSIX seconds)
    until: float  # closed_at
    max_generation: int  # _auto_redrive_max

    @classmethod
    def of(cls, queue: str, description: str | None, tripped_at: float | None,
           closed_at: float, window: int, max_generation: int) -> Outage:
        """The outage of a breaker that tripped at ``tripped_at`` and closed at ``closed_at``.

        A breaker forced closed that never tripped has no ``tripped_at``:
        the window before the close stands for the outage.
        """
        start = closed_at if tripped_at is None else min(tripped_at, closed_at)
        return cls(queue=queue, fingerprint=description_fingerprint(description),
                   since=start - window, until=closed_at, max_generation=max_generation)

    @property
    def sends_back(self) -> bool:
        """Whether anything can be sent back: its description known, redrives allowed."""
        return self.fingerprint is not None and self.max_generation > 0

    def through(self, now: float) -> Outage:
        """The same outage, its dead letters sought up to ``now`` (the redrive's time)."""
        return replace(self, until=max(self.until, now))


def generation(record: MessageRecord) -> int:
    """How many times the message was auto-redriven (its history says)."""
    return sum(1 for entry in record.history if _is_auto_redrive(entry))


def _is_auto_redrive(entry: Mapping[str, Any]) -> bool:
    return entry.get(moves.REASON) == moves.REASON_AUTO_REDRIVEN


def selected(record: MessageRecord, outage: Outage) -> bool:
    """Whether the outage sends this dead letter back (the rules above)."""
    if not outage.sends_back:
        return False
    entry = redrive.dead_letter_entry(record)
    if entry is None or entry.get(moves.QUEUE) != outage.queue:
        return False
    if not outage.since <= float(entry.get(moves.TIME, 0.0)) <= outage.until:
        return False
    return _failed_in(record, outage)


def _failed_in(record: MessageRecord, outage: Outage) -> bool:
    """Whether its last failure was the outage's, and it may still be sent back."""
    return (description_fingerprint(record.last_failure) == outage.fingerprint
            and generation(record) < outage.max_generation)


def select(records: Sequence[MessageRecord], outage: Outage) -> list[str]:
    """The ids of one page the outage sends back, in queue order (held ones left)."""
    return [record.id for record in records
            if record.claim_id is None and selected(record, outage)]


def exhausted(records: Sequence[MessageRecord], outage: Outage,
              dead_letter: DeadLetterPolicy) -> list[str]:
    """The ids of one page of the breaker's queue the outage exhausted, not moved yet.

    Each is exhausted (``dead_letter.is_exhausted``), held by no claim,
    last failed with the outage's fingerprint and is under the generation
    limit: the dead letter queue would have it, and the redrive send it
    back, had a claim reached it before the close.
    """
    if not outage.sends_back:
        return []
    return [record.id for record in records
            if record.claim_id is None
            and dead_letter.is_exhausted(record.claim_count, record.forgiven_count)
            and _failed_in(record, outage)]
