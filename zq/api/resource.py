"""What every resource class holds: the service and the clock."""

from __future__ import annotations

from zq.clock import Clock
from zq.config import Limits
from zq.service import QueueService


class Resource:
    """Base of the resource classes: parse, call one service method, format."""

    def __init__(self, service: QueueService, clock: Clock) -> None:
        self.service = service
        self.clock = clock

    @property
    def limits(self) -> Limits:
        return self.service.limits
