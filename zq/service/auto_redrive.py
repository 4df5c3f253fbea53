"""Automatic redrive after an outage, carried out (the rule: zq.poison.auto_redrive).

A breaker that closes after an outage sets ``redrive_due`` in the same
step (zq.storage.breakers). Two callers then run ``AutoRedrive.run``:

- the service call that closed it (a probe's delete, a forced close), so
  the messages come back at once; to find that out without reading the
  breaker on every delete, ``after_success`` reads it at most once a
  second per queue and process while it was last seen closed (a close
  needs a trip and at least one probe interval, of 1 s or more, after the
  read that saw it closed: the call that closes it always reads), and on
  every success while it was last seen open or half-open;
- housekeeping (zq.housekeeping), at start and after each collection,
  for every queue whose ``redrive_due`` is still set
  (``BreakerLog.due_redrives``): a crash between the close and the end
  of the redrive loses nothing.

A request's redrive walks the breaker's queue (for what the outage
exhausted and no claim moved yet: zq.poison.auto_redrive) for at most
REQUEST_BUDGET seconds, so the delete that closes a breaker in front of a
large backlog is still answered promptly. One that runs out sends back
what it found, leaves the close due for housekeeping (within one
``[gc] interval``), which walks the whole queue, and is not walked again
by this process's next requests.

Both may run at once on one queue (two workers, two servers): each move
is the move primitive's atomic step, which skips a message already moved,
so nothing moves twice; ``redrive_done`` is cleared only for the close that
was redriven, so a newer close keeps its own.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from zq import metadata as meta
from zq.clock import Clock
from zq.config import Limits
from zq.poison import auto_redrive, breaker, moves
from zq.poison.dead_letter import DeadLetterPolicy
from zq.poison.dead_letter import policy_from_metadata as dead_letter_policy
from zq.storage.base import Storage
from zq.storage.breakers import BreakerState

log = logging.getLogger(__name__)

# Seconds a process trusts a closed breaker it read (see the module documentation;
# at most the smallest _breaker_probe_interval).
TRUST_CLOSED = 1.0
# Messages read per page of the walks.
PAGE = 100
# Seconds a request (the delete that closed the breaker, a forced close) may
# walk the breaker's queue before it leaves the rest to housekeeping: about
# 50,000 messages (measured 9-12 us a message on SQLite and Redis).
REQUEST_BUDGET = 0.5
# The policy a breaker turned off is read with (to forget its due redrive).
OFF = breaker.BreakerPolicy(failure_ratio=1.0)


class AutoRedrive:
    """Runs the automatic redrive of a queue whose breaker closed after an outage."""

    def __init__(self, limits: Limits, clock: Clock) -> None:
        self.limits = limits
        self.clock = clock
        self._seen: dict[tuple[int, str, str], tuple[str, float]] = {}
        # The close whose redrive a request left to housekeeping, per queue:
        # the next requests do not walk it again.
        self._left: dict[tuple[int, str, str], float] = {}
        self._lock = threading.Lock()

    def after_success(self, storage: Storage, project: str, queue: str,
                      metadata: dict[str, Any]) -> int:
        """After a delete by a claim holder (a probe may have closed the breaker)."""
        policy = breaker.policy_from_metadata(metadata)
        if policy is None or not storage.has_breaker:
            return 0
        key = (id(storage), project, queue)
        now = self.clock.now()
        with self._lock:
            seen = self._seen.get(key)
        if seen is not None and seen[0] == breaker.CLOSED and now - seen[1] < TRUST_CLOSED:
            return 0
        state = storage.breakers.read(project, queue, policy, now)
        with self._lock:
            if len(self._seen) > 10_000:  # bounded: a long-lived process meets many queues
                self._seen.clear()
            self._seen[key] = (state.state, now)
        return self._redrive(storage, project, queue, metadata, policy, state, REQUEST_BUDGET)

    def run(self, storage: Storage, project: str, queue: str, metadata: dict[str, Any], *,
            budget: float | None = None) -> int:
        """Redrive the queue's last outage if its close left it due; messages moved.

        ``budget``: seconds the walk of the queue may take (a request's
        REQUEST_BUDGET) before it leaves the rest to housekeeping; None
        (housekeeping): no limit.
        """
        policy = breaker.policy_from_metadata(metadata)
        if policy is None or not storage.has_breaker:
            return 0
        state = storage.breakers.read(project, queue, policy, self.clock.now())
        return self._redrive(storage, project, queue, metadata, policy, state, budget)

    def run_due(self, storage: Storage) -> int:
        """Every redrive a close left due on ``storage`` (housekeeping); messages moved."""
        if not storage.has_breaker:
            return 0
        moved = 0
        for project, queue in storage.breakers.due_redrives():
            metadata = storage.queues.read_metadata(project, queue).metadata
            if breaker.policy_from_metadata(metadata) is None:
                # The breaker was turned off since its close: its outage is
                # forgotten with it, or it would be listed for ever.
                state = storage.breakers.read(project, queue, OFF, self.clock.now())
                if state.closed_at is not None:
                    storage.breakers.redrive_done(project, queue, state.closed_at)
                continue
            moved += self.run(storage, project, queue, metadata)
        return moved

    def _redrive(self, storage: Storage, project: str, queue: str, metadata: dict[str, Any],
                 policy: breaker.BreakerPolicy, state: BreakerState,
                 budget: float | None) -> int:
        if not state.redrive_due or state.closed_at is None:
            return 0
        key = (id(storage), project, queue)
        if budget is not None:
            with self._lock:
                if self._left.get(key) == state.closed_at:
                    return 0  # a request walked it already: housekeeping finishes
        dlq = metadata.get(meta.DEAD_LETTER_QUEUE)
        moved = 0
        walked = True
        if dlq and policy.auto_redrive_max > 0:
            outage = auto_redrive.Outage.of(
                queue, state.outage_description, state.tripped_at, state.closed_at,
                policy.window, policy.auto_redrive_max)
            dead_letter = dead_letter_policy(metadata)
            if dead_letter is not None and dead_letter.max_claim_count is not None:
                walked = self._dead_letter_exhausted(storage, project, outage, dead_letter,
                                                     budget)
            ttl = meta.effective(metadata, meta.DEFAULT_MESSAGE_TTL, self.limits)
            moved = self._move_back(storage, project, dlq, outage.through(self.clock.now()),
                                    ttl)
        if walked:
            storage.breakers.redrive_done(project, queue, state.closed_at)
        else:
            # Still due: housekeeping (zq.housekeeping) walks the whole queue.
            with self._lock:
                if len(self._left) > 10_000:
                    self._left.clear()
                self._left[key] = state.closed_at
            log.info("auto-redrive: %s/%s is longer than a request's walk; housekeeping "
                     "finishes its redrive", project, queue)
        if moved:
            log.info("auto-redrive: %d message(s) of %s/%s sent back to %s after its breaker "
                     "closed", moved, project, dlq, queue)
        return moved

    def _dead_letter_exhausted(self, storage: Storage, project: str,
                               outage: auto_redrive.Outage, dead_letter: DeadLetterPolicy,
                               budget: float | None) -> bool:
        """Walk the breaker's queue, moving what the outage exhausted to the dead letters.

        The move a claim would have made (zq.poison.auto_redrive says why
        none did); the walk of the dead letter queue then sends them back.
        False when ``budget`` seconds ran out before the end of the queue.
        """
        began = self.clock.now()
        marker: int | None = None
        while True:
            page = storage.messages.list(project, outage.queue, marker=marker, limit=PAGE,
                                         echo=True, include_delayed=True)
            ids = auto_redrive.exhausted(page, outage, dead_letter)
            if ids:
                storage.messages.move(project, outage.queue, ids, dead_letter.move,
                                      client_id=None)
            if len(page) < PAGE:
                return True
            if budget is not None and self.clock.now() - began >= budget:
                return False
            marker = page[-1].marker

    def _move_back(self, storage: Storage, project: str, dlq: str,
                   outage: auto_redrive.Outage, ttl: int) -> int:
        """Walk the dead letter queue once, moving the selected page by page."""
        move = moves.auto_redriven(outage.queue, ttl)
        moved = 0
        marker: int | None = None
        while True:
            page = storage.messages.list(project, dlq, marker=marker, limit=PAGE, echo=True,
                                         include_delayed=True, include_claimed=True)
            ids = auto_redrive.select(page, outage)
            if ids:
                moved += len(storage.messages.move(project, dlq, ids, move, client_id=None))
            if len(page) < PAGE:
                return moved
            marker = page[-1].marker
