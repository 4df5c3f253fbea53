"""What every MongoDB controller works with: collections, clock, unit runner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zq.clock import Clock
from zq.storage.mongo.unit import UnitRunner


@dataclass(frozen=True)
class MongoContext:
    """What every MongoDB controller works with: the database, clock and unit runner."""

    database: Any
    clock: Clock
    units: UnitRunner

    @property
    def queues(self) -> Any:
        return self.database["queues"]

    @property
    def messages(self) -> Any:
        return self.database["messages"]

    @property
    def claims(self) -> Any:
        return self.database["claims"]

    @property
    def counters(self) -> Any:
        return self.database["counters"]

    @property
    def links(self) -> Any:
        return self.database["links"]

    @property
    def consumers(self) -> Any:
        return self.database["consumers"]

    @property
    def breakers(self) -> Any:
        return self.database["breakers"]

    @property
    def breaker_outcomes(self) -> Any:
        return self.database["breaker_outcomes"]
