"""Blame split: whom a lapsed claim is charged to, decided here once.

A claim *lapses* when it expires without a delete, reject or release of its
message. Zaqar (and zq without ``_suspect_lapsed_consumers``) charges every
lapse to the message: it counts toward ``_max_claim_count``. With
``_suspect_lapsed_consumers: true`` (``DeliveryRules.blame_split``) the claim
or pop whose walk discovers the lapse decides, in its own atomic step:

1. **message**, when the message has now lapsed with two different
   Client-IDs (it is the common factor; it keeps the distinct Client-IDs
   of its lapses, at most two: ``lapsed_with``). This rule wins a tie with
   rule 2: a message that two consumers lapsed on is charged even when the
   second consumer is suspected too.
2. **consumer**, when the lapsed claim's Client-ID is *suspected*: it has
   another lapsed claim on the queue (expired, never settled, another claim
   id in the consumer log), or it has made no claim on the queue since this
   claim expired. The message is forgiven (``forgiven_count`` + 1).
3. **message** otherwise (no Client-ID, or a healthy consumer): Zaqar's rule.

Each lapse adds a history entry in place (``lapse_entry``, at most
LAPSE_ENTRIES kept). A lapse charged to the message that leaves it
exhausted moves it with reason ``lapsed`` (zq.poison.moves.lapsed) and a
description naming the consumers (``exhaustion_description``). While the
queue's breaker is open a lapse is forgiven whoever is to blame
(``CHARGED_TO_OUTAGE``). Drivers carry this out; the Lua scripts make the
same decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zq.poison import moves

CONSUMER = "consumer"
MESSAGE = "message"
# A lapse while the queue's breaker was open: forgiven, whoever was to blame.
OUTAGE = "outage"
CHARGED_TO = (CONSUMER, MESSAGE, OUTAGE)

# Distinct Client-IDs a message remembers of its lapses.
LAPSED_WITH = 2
# Lapse entries a message's history keeps (the most recent); moves are always kept.
LAPSE_ENTRIES = 10


@dataclass(frozen=True, slots=True)
class Lapse:
    """What one discovered lapse does to its message."""

    charged_to: str  # CONSUMER, MESSAGE or OUTAGE
    lapsed_with: tuple[str, ...]  # the message's distinct lapse Client-IDs after it

    @property
    def forgiven(self) -> bool:
        """Whether the lapse is not counted toward ``_max_claim_count``."""
        return self.charged_to != MESSAGE


def judge(lapsed_with: Sequence[str], client_id: str | None, *, suspected: bool,
          outage: bool = False) -> Lapse:
    """Blame one lapse (the rules in the module documentation).

    ``lapsed_with``: the message's Client-IDs of earlier lapses;
    ``client_id``: the lapsed claim's (None: unknown); ``suspected``: whether
    that consumer is suspected (``suspects``); ``outage``: the breaker was
    open when the claim lapsed.
    """
    known = tuple(lapsed_with)
    if client_id is not None and client_id not in known and len(known) < LAPSED_WITH:
        known = (*known, client_id)
    if outage:
        return Lapse(OUTAGE, known)
    if len(known) >= LAPSED_WITH and client_id is not None:
        return Lapse(MESSAGE, known)
    if client_id is not None and suspected:
        return Lapse(CONSUMER, known)
    return Lapse(MESSAGE, known)


def suspects(*, other_unsettled_lapses: int, claims_since: int) -> bool:
    """Whether the consumer of a lapsed claim is suspected (rule 2).

    ``other_unsettled_lapses``: its other claims on the queue that expired
    unsettled; ``claims_since``: its claims on the queue made at or after
    ``claim_expires`` (the claim being made now by the same Client-ID counts).
    """
    return other_unsettled_lapses > 0 or claims_since == 0


def lapse_entry(queue: str, now: float, client_id: str | None, lapse: Lapse) -> dict[str, Any]:
    """The history entry a discovered lapse adds (not a move: ``moves.is_move_entry``)."""
    return {moves.QUEUE: queue, moves.REASON: moves.REASON_LAPSED, moves.TIME: now,
            moves.CLIENT_ID: client_id, moves.CHARGED_TO: lapse.charged_to}


def with_lapse(history: Sequence[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """``history`` plus ``entry``, keeping the LAPSE_ENTRIES most recent lapse entries."""
    entries = [*history, entry]
    lapses = [i for i, e in enumerate(entries) if not moves.is_move_entry(e)]
    dropped = set(lapses[:-LAPSE_ENTRIES])
    return [e for i, e in enumerate(entries) if i not in dropped]


def exhaustion_description(lapsed_with: Sequence[str]) -> str:
    """The description of a move of a message exhausted by a charged lapse."""
    if len(lapsed_with) >= 2:
        return (f"lapsed with two consumers: {lapsed_with[0]} and {lapsed_with[1]}; "
                "the message is the common factor")
    if lapsed_with:
        return f"lapsed with consumer {lapsed_with[0]}, which was not suspected"
    return "lapsed with a consumer that gave no Client-ID"
