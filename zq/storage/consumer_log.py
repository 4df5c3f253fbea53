"""The storage contract of the consumer log (GET /v2/queues/{q}/consumers).

Storage.consumers of every driver; the rule that reads it (live, lapsed,
suspected consumers) is zq.poison.consumers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from zq.storage.records import ConsumerClaim


class ConsumerLog(ABC):
    """Who claims from a queue, and which of their claims lapsed.

    An advisory record beside the claims themselves. A new claim's record
    is written by the claim's own atomic step (ClaimController.create with
    ``consumer``), a claim's first delete settles it in the delete's own
    step (MessageController.delete with ``settle_claim``, delete_many with
    ``settle_claims``); the other
    settles, renewals and forgets are written by the service just before
    or after the operation they describe (zq.poison.consumers), so a crash in
    between loses one settle, never a message. Every write is idempotent.
    Times are given by the caller (the service reads the driver's clock).
    """

    @abstractmethod
    def record(self, project: str, queue: str, claim: ConsumerClaim, *,
               forget_before: float) -> None:
        """Remember a new claim; forget the queue's records whose
        ``expires`` is before ``forget_before``, in the same step."""

    @abstractmethod
    def settle(self, project: str, queue: str, claim_id: str, *, now: float,
               ended: bool) -> None:
        """Set ``settled`` to ``now`` unless already set; with ``ended`` (a
        release) also lower ``expires`` to ``now`` when it is later. An
        unknown claim id changes nothing."""

    @abstractmethod
    def extend(self, project: str, queue: str, claim_id: str, *, ttl: int,
               now: float) -> None:
        """A renew: a claim still live at ``now`` gets ``expires = now + ttl``
        and ``ttl``; one that had expired is settled instead (a late renew
        shows its holder is alive). An unknown claim id changes nothing."""

    @abstractmethod
    def forget(self, project: str, queue: str) -> None:
        """Drop every record of the queue (it was deleted)."""

    @abstractmethod
    def claims(self, project: str, queue: str, *, expires_after: float,
               client_id: str | None = None) -> list[ConsumerClaim]:
        """The queue's records with ``expires >= expires_after`` (only
        ``client_id``'s when given), in no particular order."""
