"""The storage contract of the breaker (zq.poison.breaker): Storage.breakers.

A driver with ``Storage.has_breaker`` keeps, per queue, the breaker record
and the outcomes of the current window (failures: time, message id,
description; successes: time), and carries the state machine out inside
the atomic steps the service hands ``DeliveryRules.breaker`` to:

- **failure**: a reject (``MessageController.reject``, or ``move`` with a
  claim id and ``zq.poison.moves.rejected``: a terminal reject) by the
  holder of the live claim, with its description
  (``zq.poison.breaker.stored_description``); or a *lapse*, discovered by
  the claim or pop whose walk meets a free message that still carries a
  claim that expired (description None), counted at the claim's expiry.
  Each failure sets the message's ``last_failure`` (None for a lapse).
- **success**: a delete by the holder of a live claim (``delete`` with the
  claim id, ``delete_many`` with ``claim_ids``). Pops and deletes without
  a claim are neither.

Outcomes older than ``policy.window`` are trimmed by the steps that write
them; queue delete and purge drop the record and the outcomes.

State machine (the same on every driver; tests/contract/test_breaker.py):

- ``closed``: after a failure is recorded, ``zq.poison.breaker.trips`` on
  the window's outcomes -> ``open`` (since = tripped_at = now,
  description = ``most_common`` of the window, next probe at now +
  probe_interval, a ``breaker`` event). The tripping failure is charged;
  the later ones are forgiven.
- ``open`` / ``half-open``: each failure (reject, lapse whose claim expired
  at or after tripped_at) adds 1 to the message's ``forgiven_count``; a
  terminal reject is held as a retry reject (retry_after None, the
  ``rejected`` event with ``held``) instead of moving. A claim delivers
  nothing unless now >= next probe and no probe is outstanding; then one
  message at most (the probe: its claim id is recorded), next probe at
  now + probe_interval. A pop delivers nothing.
- A probe succeeds when its claim deletes it: probe_successes + 1, the
  state ``half-open`` (event on entering it) and the next probe may go at
  once; at ``close_after`` successes: ``closed`` (since = closed_at = now,
  redrive_due when ``auto_redrive_max`` > 0, the window's outcomes cleared,
  event).
- A probe fails (rejected, or its claim lapsed, seen by the next claim):
  ``open`` (probe_successes 0, next probe at now + probe_interval; an
  event only when the state changes).
- Non-probe successes are recorded but never close it.

The ``breaker`` event is on the queue, without message id, with
``zq.events.breaker_detail`` (the window's counts at the change).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from zq.poison.breaker import CLOSED, BreakerPolicy, description_fingerprint


@dataclass(frozen=True, slots=True)
class BreakerState:
    """A queue's breaker as ``BreakerLog.read`` returns it."""

    state: str  # zq.poison.breaker.CLOSED / OPEN / HALF_OPEN
    since: float  # when it entered ``state`` (closed and never tripped: queue created, or 0)
    # Open or half-open: the description the outage is known by (the most
    # common of the window when it tripped). Closed: the most common of the
    # current window. None: no failure had one.
    description: str | None = None
    tripped_at: float | None = None  # when it last opened (by a trip or forced)
    closed_at: float | None = None  # when it last closed after being open
    # Closed after an outage, and the auto-redrive of that outage has not
    # run yet (BreakerLog.redrive_done clears it).
    redrive_due: bool = False
    # The description it last opened on (the ``description`` of the open
    # state), kept when it closes and until it opens again: the outage the
    # auto-redrive of ``redrive_due`` sends back (zq.poison.auto_redrive).
    # None: it never opened, or opened on no description.
    outage_description: str | None = None

    @property
    def fingerprint(self) -> str | None:
        """zq.poison.breaker.description_fingerprint of ``description``."""
        return description_fingerprint(self.description)


def initial_state(created: float | None = None) -> BreakerState:
    """The state of a queue whose breaker never recorded anything."""
    return BreakerState(state=CLOSED, since=created or 0.0)


class BreakerLog(ABC):
    """Reading and forcing a queue's breaker (the driver's steps change it too)."""

    @abstractmethod
    def read(self, project: str, queue: str, policy: BreakerPolicy, now: float) -> BreakerState:
        """The queue's breaker (``initial_state`` when nothing is stored).

        Closed: ``description`` is the most common failure description of
        the window ending at ``now`` (zq.poison.breaker.most_common).
        """

    @abstractmethod
    def force(self, project: str, queue: str, state: str, policy: BreakerPolicy,
              now: float) -> BreakerState:
        """Force it ``open`` or ``closed`` (zq.poison.breaker.FORCEABLE); the new state.

        Open: as a trip (description the window's most common, next probe
        at now + probe_interval). Closed: as a close after probes (the
        window cleared, redrive_due when ``policy.auto_redrive_max`` > 0).
        A ``breaker`` event with ``forced`` True, in the same step. Forcing
        the state it is already in (half-open counts as open) changes
        nothing and records nothing.
        """

    @abstractmethod
    def redrive_done(self, project: str, queue: str, closed_at: float) -> None:
        """Clear ``redrive_due`` if the breaker last closed at ``closed_at``."""

    @abstractmethod
    def due_redrives(self) -> list[tuple[str, str]]:
        """``(project, queue)`` of every queue of this backend whose ``redrive_due`` is set.

        Housekeeping (zq.service.auto_redrive) runs what a crash between a
        close and its auto-redrive left undone; a queue deleted or purged
        since is not listed (its breaker went with it).
        """
