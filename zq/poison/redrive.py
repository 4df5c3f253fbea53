"""The redrive rule: which dead letters a redrive takes, and where each goes.

``POST /v2/queues/{dlq}/redrive`` (QueueService.redrive) sends dead
letters back. This module decides, without I/O, which messages of the dead
letter queue a request selects and the destination of each; the service
reads the pages, checks the destinations' pools and carries the moves out
with the one move primitive (``MessageController.move`` with
``zq.poison.moves.redriven``).

A message is selected by its *dead letter entry*: its most recent history
entry that is a move (lapse entries are not), the move that brought it
into the queue it is in. A message with no
history (posted straight into the dead letter queue), or whose most recent
entry is itself a redrive (it was redriven into this queue), has none:
the filters on reason, source and time never select it, and without
``to`` it has nowhere to go back to, so it is not selected either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zq.poison import moves

if TYPE_CHECKING:  # zq.storage imports zq.validation, which imports this module
    from zq.storage.records import MessageRecord

# A call reads at most this many times its limit cap of messages of the
# dead letter queue (a filter that selects few costs bounded work per
# call; ``next`` continues the walk).
SCAN_FACTOR = 10

# The reasons a dead letter entry can have (filter ``reason``).
DEAD_LETTER_REASONS = (moves.REASON_MAX_CLAIM_COUNT, moves.REASON_REJECTED,
                       moves.REASON_EXPIRED, moves.REASON_UNREADABLE, moves.REASON_LAPSED)


@dataclass(frozen=True, slots=True)
class RedriveFilter:
    """What to select; None (or empty) fields select everything."""

    ids: tuple[str, ...] | None = None
    reason: str | None = None
    source: str | None = None  # "from": the queue it was dead lettered from
    fingerprint: str | None = None
    dead_lettered_before: float | None = None  # POSIX seconds, strictly before
    dead_lettered_after: float | None = None  # POSIX seconds, strictly after

    @property
    def needs_entry(self) -> bool:
        """Whether only messages with a dead letter entry can match."""
        return (self.reason is not None or self.source is not None
                or self.dead_lettered_before is not None
                or self.dead_lettered_after is not None)


@dataclass(frozen=True, slots=True)
class RedriveRequest:
    """A checked redrive body (zq.validation.redrive_document)."""

    to: str | None
    filter: RedriveFilter
    limit: int
    dry_run: bool
    marker: str | None  # the ``next`` of the previous call
    create: bool = False  # whether a missing destination may be created


@dataclass(frozen=True, slots=True)
class RedriveResult:
    """What a call matched and moved; ``to`` counts per destination.

    In a dry run nothing moves: ``moved`` is 0, ``to`` counts the matched
    messages each destination would receive and ``created`` names the
    destinations that would be created.
    """

    matched: int
    moved: int
    to: dict[str, int]
    next: str | None  # the marker to continue with; None: the walk is over
    created: tuple[str, ...] = ()  # destinations this call created (``create``)
    # Messages a fingerprint filter could not judge: their bodies could not
    # be opened (zq.service.opening); never selected, left where they are.
    unreadable: Sequence[str] = ()

    def as_dict(self) -> dict[str, Any]:
        shown = {"matched": self.matched, "moved": self.moved, "to": dict(self.to),
                 "created": list(self.created), "next": self.next}
        if self.unreadable:
            shown["unreadable"] = list(self.unreadable)
        return shown


def dead_letter_entry(record: MessageRecord) -> Mapping[str, Any] | None:
    """The move that brought the message where it is, if it was dead lettered there.

    Lapse entries (zq.poison.blame, written in place) are not moves: passed over.
    """
    entries = [entry for entry in record.history if moves.is_move_entry(entry)]
    if not entries:
        return None
    last = entries[-1]
    if last.get(moves.REASON) in (moves.REASON_REDRIVEN, moves.REASON_AUTO_REDRIVEN):
        return None
    return last


def matches(
    record: MessageRecord, selected: RedriveFilter, fingerprint_of: Callable[[MessageRecord], str]
) -> bool:
    """Whether the filter selects the message (``fingerprint_of`` is asked only if needed)."""
    if selected.ids is not None and record.id not in selected.ids:
        return False
    entry = dead_letter_entry(record)
    if selected.needs_entry:
        if entry is None:
            return False
        if selected.reason is not None and entry.get(moves.REASON) != selected.reason:
            return False
        if selected.source is not None and entry.get(moves.QUEUE) != selected.source:
            return False
        time = float(entry.get(moves.TIME, 0.0))
        if selected.dead_lettered_before is not None and not time < selected.dead_lettered_before:
            return False
        if selected.dead_lettered_after is not None and not time > selected.dead_lettered_after:
            return False
    return selected.fingerprint is None or fingerprint_of(record) == selected.fingerprint


def destination(record: MessageRecord, to: str | None) -> str | None:
    """Where the message goes: ``to``, else the queue it was dead lettered from."""
    if to is not None:
        return to
    entry = dead_letter_entry(record)
    return None if entry is None else entry.get(moves.QUEUE)


def select(
    records: Sequence[MessageRecord],
    request: RedriveRequest,
    fingerprint_of: Callable[[MessageRecord], str],
    room: int,
) -> tuple[dict[str, list[str]], int, int | None]:
    """Up to ``room`` selected messages of one page, grouped by destination.

    Returns the groups (ids in queue order), how many records were read, and
    the marker of the last record read (None when none was).
    """
    groups: dict[str, list[str]] = {}
    taken = 0
    read = 0
    last: int | None = None
    for record in records:
        if taken >= room:
            break
        read += 1
        last = record.marker
        if not matches(record, request.filter, fingerprint_of):
            continue
        target = destination(record, request.to)
        if target is None:
            continue
        groups.setdefault(target, []).append(record.id)
        taken += 1
    return groups, read, last
