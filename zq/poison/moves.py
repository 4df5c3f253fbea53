"""What a message looks like after it moves to another queue: decided here, once.

Every poison feature moves messages between two queues of one pool with
one atomic storage step (``MessageController.move`` and the dead letter
move inside a claim or pop): a claim that finds an exhausted message, a
terminal reject, expiry with ``_dead_letter_expired`` and a redrive. This
module decides, for each of them, what the moved message becomes (its ttl,
the history entry appended to it, its claim and redrive counts, the event
recorded); the drivers, Lua scripts included, only carry the values out.

What a driver computes itself, because it happens at the moment of the
move inside its atomic step (pinned by tests/contract/test_moves.py):

- ``ttl``: ``Move.ttl``, or the message's own ttl when it is None;
- ``created`` = now and ``expires`` = now + ttl (``Move.values``);
- the message is free in the destination: no claim, no delay;
- ``claim_count`` is 0 when ``Move.reset_claim_count`` else kept, and so
  are ``forgiven_count`` (0 or kept) and ``lapsed_with`` (empty or kept);
  ``last_failure`` is always kept; ``redrive_count`` goes up by one when
  ``Move.count_redrive``;
- the history entry (``Move.history_entry``) is appended, last;
- one ``Move.event`` event per moved message, on the source queue, with
  the message's claim count before the move, and ``Move.event_detail``
  (the fixed part ``Move.detail`` plus the message's fingerprint and the
  first ``events.SAMPLE_CHARS`` characters of its body).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zq import events

# History reasons (``MessageRecord.history`` entries, ``dead_lettered``
# event details, zq stats).
REASON_MAX_CLAIM_COUNT = "max_claim_count"
REASON_REJECTED = "rejected"
REASON_EXPIRED = "expired"
REASON_REDRIVEN = "redriven"
REASON_UNREADABLE = "unreadable"  # its sealed body could not be opened (zq.service.opening)
# A lapse charged to the message exhausted it (zq.poison.blame); also the
# reason of each lapse entry of its history (those carry CHARGED_TO).
REASON_LAPSED = "lapsed"

# History entry keys.
QUEUE = "queue"  # the queue the message left
REASON = "reason"
TIME = "time"  # POSIX seconds of the move
DESCRIPTION = "description"  # why, in words (a reject's text), when given
# Only in a lapse entry (zq.poison.blame.lapse_entry), never in a move's.
CLIENT_ID = "client_id"  # the Client-ID whose claim lapsed, None when it gave none
CHARGED_TO = "charged_to"  # whom the lapse was charged to (zq.poison.blame)


def is_move_entry(entry: Mapping[str, Any]) -> bool:
    """Whether a history entry records a move (not a lapse in place)."""
    return CHARGED_TO not in entry


@dataclass(frozen=True, slots=True)
class MovedValues:
    """A moved message's ttl and times (see ``Move.values``)."""

    ttl: int
    created: float
    expires: float


@dataclass(frozen=True, slots=True)
class Move:
    """One kind of move to queue ``to`` of the same pool, as a driver carries it out.

    Build one with the constructors below rather than by hand: they hold
    the rule of each feature.
    """

    to: str  # the destination queue, created if missing
    reason: str  # the history entry's reason
    ttl: int | None = None  # None: each message keeps its own ttl
    description: str | None = None  # kept in the history entry and the event
    reset_claim_count: bool = False
    count_redrive: bool = False
    event: str = events.DEAD_LETTERED

    def values(self, message_ttl: int, now: float) -> MovedValues:
        """The ttl, created and expires a message gets when moved at ``now``."""
        ttl = self.ttl if self.ttl is not None else message_ttl
        return MovedValues(ttl=ttl, created=now, expires=now + ttl)

    def history_entry(self, source: str, now: float) -> dict[str, Any]:
        """The raw history entry a move out of ``source`` at ``now`` appends."""
        entry: dict[str, Any] = {QUEUE: source, REASON: self.reason, TIME: now}
        if self.description is not None:
            entry[DESCRIPTION] = self.description
        return entry

    @property
    def detail(self) -> dict[str, Any]:
        """The event detail's part that is the same for every message moved."""
        return events.moved_detail(self.to, self.reason, self.description)

    def event_detail(self, fingerprint: str, body: str) -> dict[str, Any]:
        """The whole event detail of one moved message."""
        return events.with_message_sample(self.detail, fingerprint, body)


def dead_lettered(to: str, ttl: int | None) -> Move:
    """An exhausted message found by a claim or pop (``_max_claim_count``)."""
    return Move(to=to, reason=REASON_MAX_CLAIM_COUNT, ttl=ttl)


def rejected(to: str, ttl: int | None, description: str | None) -> Move:
    """A terminal reject by the holder of the message's claim."""
    return Move(to=to, reason=REASON_REJECTED, ttl=ttl, description=description)


def unreadable(to: str, ttl: int | None, description: str) -> Move:
    """A message a claim or pop took whose body could not be opened, set aside.

    The description is the failure (it names the key id, never the body).
    """
    return Move(to=to, reason=REASON_UNREADABLE, ttl=ttl, description=description)


def lapsed(to: str, ttl: int | None, description: str) -> Move:
    """An exhausted message whose last lapse was charged to it (blame split on)."""
    return Move(to=to, reason=REASON_LAPSED, ttl=ttl, description=description)


def expired(to: str, ttl: int | None) -> Move:
    """A message whose ttl ran out in a queue with ``_dead_letter_expired``."""
    return Move(to=to, reason=REASON_EXPIRED, ttl=ttl)


def redriven(to: str, ttl: int) -> Move:
    """A dead letter sent back to ``to``: claims start over, expiry with ``to``'s ttl."""
    return Move(to=to, reason=REASON_REDRIVEN, ttl=ttl, reset_claim_count=True,
                count_redrive=True, event=events.REDRIVEN)


# A dead letter sent back by the close of its queue's breaker (zq.poison.auto_redrive).
REASON_AUTO_REDRIVEN = "auto_redriven"


def auto_redriven(to: str, ttl: int) -> Move:
    """A dead letter of an outage sent back to ``to`` when its breaker closed.

    As a redrive (claims start over, ``to``'s ttl, ``redrive_count`` + 1, a
    ``redriven`` event) with its own reason, which counts its generation.
    """
    return Move(to=to, reason=REASON_AUTO_REDRIVEN, ttl=ttl, reset_claim_count=True,
                count_redrive=True, event=events.REDRIVEN)
