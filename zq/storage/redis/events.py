"""The event log on Redis: one stream per backend (per key prefix)."""

from __future__ import annotations

import json

from zq.errors import InvalidRequest
from zq.storage.base import EventLog
from zq.storage.records import Event
from zq.storage.redis.controller import RedisController


def _event(cursor: str, flat: list[str]) -> Event:
    # Field names are the ones event() in lua/_lib.lua writes.
    fields = dict(zip(flat[0::2], flat[1::2], strict=True))
    count = fields.get("n")
    return Event(
        cursor=cursor,
        time=float(fields["t"]),
        project=fields["p"],
        queue=fields["q"],
        kind=fields["k"],
        message_id=fields.get("m"),
        claim_id=fields.get("c"),
        client_id=fields.get("cl"),
        claim_count=None if count is None else int(count),
        detail=json.loads(fields["d"]) if "d" in fields else {},
    )


def next_stream_id(cursor: str) -> str:
    """The smallest stream id after ``cursor`` (``ms-seq``)."""
    ms, sep, seq = cursor.partition("-")
    if not (ms.isdigit() and sep and seq.isdigit()):
        raise InvalidRequest(f"{cursor!r} is not a Redis event cursor (ms-seq).")
    return f"{ms}-{int(seq) + 1}"


class RedisEventLog(RedisController, EventLog):
    """The stream: XADD gives each event its id inside the change's script,
    so stream order is commit order (``final_order``)."""

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        if after is not None:
            next_stream_id(after)  # reject a malformed cursor with a clear error
        rows = self._run("events_read", after or "", limit)
        return [_event(cursor, flat) for cursor, flat in rows]

    def sort_key(self, cursor: str) -> tuple[int, ...]:
        ms, _, seq = cursor.partition("-")
        return (int(ms), int(seq or 0))

    def count(self, *, after: str | None = None) -> int:
        if after is not None:
            next_stream_id(after)
        return int(self._run("events_count", after or ""))

    def end(self) -> str | None:
        last = self._run("events_end")
        return None if not last else (last.decode() if isinstance(last, bytes) else str(last))

    def trim(self, *, up_to: str) -> int:
        # XTRIM MINID keeps ids >= the threshold: the one after up_to.
        return int(self._run("events_trim", next_stream_id(up_to)))
