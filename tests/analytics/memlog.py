"""An in-memory EventLog following the storage contract, for export tests."""

from __future__ import annotations

from collections.abc import Iterable

from zq.storage.base import EventLog
from zq.storage.records import Event


class MemoryEventLog(EventLog):
    """Append-only list of events with integer cursors, trimmable."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self.events: list[Event] = []
        self.next_cursor = 1
        self.append(events)

    def append(self, events: Iterable[Event]) -> None:
        for event in events:
            # Cursors are the log's own: renumber whatever the generator gave.
            self.events.append(Event(
                cursor=str(self.next_cursor), time=event.time, project=event.project,
                queue=event.queue, kind=event.kind, message_id=event.message_id,
                claim_id=event.claim_id, client_id=event.client_id,
                claim_count=event.claim_count, detail=event.detail,
            ))
            self.next_cursor += 1

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        start = 0 if after is None else int(after)
        return [e for e in self.events if int(e.cursor) > start][:limit]

    def count(self, *, after: str | None = None) -> int:
        return len(self.read(after=after, limit=len(self.events)))

    def end(self) -> str | None:
        return self.events[-1].cursor if self.events else None

    def trim(self, *, up_to: str) -> int:
        before = len(self.events)
        self.events = [e for e in self.events if int(e.cursor) > int(up_to)]
        return before - len(self.events)


class LogOnlyStorage:
    """Just enough of a Storage for the exporter: an ``events`` attribute."""

    def __init__(self, log: EventLog) -> None:
        self.events = log
