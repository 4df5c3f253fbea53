"""What every resource class holds: the service and the clock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import falcon

from zq.api import representation
from zq.clock import Clock
from zq.config import Limits
from zq.metrics.waiting import WaitingCensus
from zq.service import QueueService, opening
from zq.service.opening import Unreadable
from zq.storage.records import MessageRecord


class Resource:
    """Base of the resource classes: parse, call one service method, format."""

    def __init__(self, service: QueueService, clock: Clock, *,
                 waiting: WaitingCensus | None = None) -> None:
        self.service = service
        self.clock = clock
        # The server's waiting claims (long poll), for stats and consumers.
        self.waiting = waiting

    @property
    def limits(self) -> Limits:
        return self.service.limits

    def show_messages(
        self, req: falcon.Request, records: Iterable[MessageRecord], claim_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Messages as this request wants them shown, timed now."""
        now = self.clock.now()
        history = req.context.include_history
        return [
            representation.message(r, now, claim_id=claim_id, history=history) for r in records
        ]

    @staticmethod
    def report_unreadable(resp: falcon.Response, unreadable: Sequence[Unreadable]) -> None:
        """Name the messages left out because their bodies could not be opened.

        A header, so that the body keeps Zaqar's shape (docs/encryption.md).
        """
        if unreadable:
            resp.set_header(opening.HEADER, ",".join(u.id for u in unreadable))
