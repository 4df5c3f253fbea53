"""The redrive of a dead letter queue (``POST /v2/queues/{dlq}/redrive``, ``zq redrive``).

Selects with zq.poison.redrive's rule, page by page within a bounded walk,
checks every destination before anything moves and moves each
destination's messages with the move primitive (zq.poison.moves.redriven).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from zq import metadata as meta
from zq import validation
from zq.config import Limits
from zq.errors import DeadLetterConflict, InvalidRequest, QueueNotFound
from zq.poison import moves, redrive
from zq.pooling import Pools
from zq.service.bodies import Bodies
from zq.storage.base import Storage
from zq.storage.records import MessageRecord


class Redrive:
    """Redrives over the resolver ``pools``; ``metadata_of(project, queue)`` reads metadata."""

    def __init__(self, limits: Limits, pools: Pools, bodies: Bodies,
                 metadata_of: Callable[[str, str], dict[str, Any]]) -> None:
        self.limits = limits
        self.pools = pools
        self._bodies = bodies
        self._metadata_of = metadata_of

    def run(self, project: str, queue: str, request: redrive.RedriveRequest, *,
            client_id: str | None) -> redrive.RedriveResult:
        """Move the selected dead letters of ``queue`` to their destinations."""
        if request.to == queue:
            raise InvalidRequest(
                f"to names the dead letter queue itself ({queue!r}): a redrive moves "
                "messages out of it; name another queue, or leave to out to send each "
                "message back where it was dead lettered from.")
        storage = self.pools.storage_for(project, queue)
        if not storage.queues.exists(project, queue):
            raise QueueNotFound(
                f"Queue {queue!r} does not exist, so there are no dead letters to redrive "
                "from it; check the name and the project.")
        unreadable: list[str] = []
        groups, matched, following = self._selection(project, queue, storage, request,
                                                     unreadable)
        created = self._check_destinations(project, queue, request, list(groups))
        if request.dry_run:
            counts = {to: len(ids) for to, ids in groups.items()}
            return redrive.RedriveResult(matched, 0, counts, following, created, unreadable)
        counts = {}
        for to, ids in groups.items():
            ttl = meta.effective(self._metadata_of(project, to),
                                 meta.DEFAULT_MESSAGE_TTL, self.limits)
            moved = storage.messages.move(project, queue, ids, moves.redriven(to, ttl),
                                          client_id=client_id)
            if moved:
                counts[to] = len(moved)
        return redrive.RedriveResult(matched, sum(counts.values()), counts, following, created,
                                     unreadable)

    def _selection(
        self, project: str, queue: str, storage: Storage, request: redrive.RedriveRequest,
        unreadable: list[str],
    ) -> tuple[dict[str, list[str]], int, str | None]:
        """The selected ids by destination, how many, and the ``next`` marker.

        A fingerprint filter needs each body's plaintext: the ids of those
        that cannot be opened go to ``unreadable`` (never selected).
        """
        page_size = validation.redrive_limit_cap(self.limits)
        groups: dict[str, list[str]] = {}
        fingerprint_of = self._bodies.fingerprint_of(project, queue, unreadable)

        def take(records: list[MessageRecord], room: int) -> int | None:
            # A held message is not taken from its holder (the primitive
            # would skip it too), nor one that would go back into the queue.
            free = [r for r in records if r.claim_id is None]
            found, read, last = redrive.select(free, request, fingerprint_of, room)
            for to, ids in found.items():
                if to != queue:
                    groups.setdefault(to, []).extend(ids)
            if read < len(free):  # stopped inside the page: the last one read is the marker
                return last
            return records[-1].marker if records else None

        if request.filter.ids is not None:
            if request.filter.ids:
                take(storage.messages.get_many(project, queue, request.filter.ids),
                     request.limit)
            return groups, _count(groups), None
        marker = validation.message_marker(request.marker)
        budget = page_size * redrive.SCAN_FACTOR
        while True:
            page = storage.messages.list(project, queue, marker=marker, limit=page_size,
                                         echo=True, include_delayed=True, include_claimed=True)
            room = request.limit - _count(groups)
            last = take(page, room)
            if last is not None:
                marker = last
            budget -= len(page)
            if len(page) < page_size and _count(groups) < request.limit:
                return groups, _count(groups), None  # the end of the queue
            if _count(groups) >= request.limit or budget <= 0 or not page:
                return groups, _count(groups), None if not page else str(marker)

    def _check_destinations(
        self, project: str, queue: str, request: redrive.RedriveRequest, destinations: list[str]
    ) -> tuple[str, ...]:
        """Every destination on the dead letter queue's pool, and existing unless ``create``.

        Returns the missing destinations that messages go to, which the
        moves create (a dry run: would create); outside a dry run they are
        first registered beside the dead letter queue, so the catalog says
        where they are.
        """
        home = self.pools.pool_of(project, queue)
        missing = []
        # A "to" is checked even when nothing matched: a misspelt one is
        # refused before the first page, not when a later page finds messages.
        named_to = [] if request.to is None else [request.to]
        for to in sorted({*destinations, *named_to}):
            pool = self.pools.pool_of(project, to)
            if pool is not None and pool != home:
                raise DeadLetterConflict(
                    f"Queue {to!r} lives on pool {pool!r} but dead letter queue {queue!r} "
                    f"lives on pool {home!r}: a redrive moves messages within one pool. "
                    "Nothing was moved; leave this destination out with filter.from, "
                    "or redrive to a queue of that pool.")
            if not self.pools.storage_for(project, to).queues.exists(project, to):
                missing.append(to)
        if missing and not request.create:
            # Creating a queue nobody consumes from would strand the
            # messages: a misspelt "to", or a source deleted on purpose.
            named = ", ".join(repr(to) for to in missing)
            subject = f"Queue {named}" if len(missing) == 1 else f"Queues {named}"
            if request.to is None:
                subject += ", which the messages were dead lettered from,"
            verb = "does" if len(missing) == 1 else "do"
            raise QueueNotFound(
                f"{subject} {verb} not exist. A redrive creates a missing destination "
                'only when asked: "create": true (zq redrive --create), or create the '
                "queue first. Nothing was moved.")
        created = tuple(to for to in missing if to in destinations)
        if not request.dry_run:
            for to in created:
                if self.pools.pool_of(project, to) is None:
                    self.pools.place_beside(project, to, beside=queue)
        return created


def _count(groups: Mapping[str, list[str]]) -> int:
    return sum(len(ids) for ids in groups.values())
