"""What every resource class holds: the service and the clock."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import falcon

from zq.api import representation
from zq.clock import Clock
from zq.config import Limits
from zq.service import QueueService
from zq.storage.records import MessageRecord


class Resource:
    """Base of the resource classes: parse, call one service method, format."""

    def __init__(self, service: QueueService, clock: Clock) -> None:
        self.service = service
        self.clock = clock

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
