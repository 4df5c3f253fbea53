"""How resources look on the wire: hrefs, messages, claims, stats.

Message bodies are stored as JSON text and embedded with orjson.Fragment,
so a read never decodes and re-encodes them.

A dead lettered message's ``history`` is shown only when the request asks
for it (``include_history=true``): python-zaqarclient builds its Message
objects from every key of a message and fails on one it does not know, so
by default a message carries only keys that client accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import orjson

from zq.poison.history import compact_history, iso8601
from zq.storage.breakers import BreakerState
from zq.storage.records import ClaimRecord, MessageRecord, MessageStamp, QueueStats

API_ROOT = "/v2"


def queue_href(queue: str) -> str:
    return f"{API_ROOT}/queues/{queue}"


def message_href(queue: str, message_id: str, claim_id: str | None = None) -> str:
    # Spelled out, not through queue_href: once per message shown or posted.
    if claim_id is None:
        return f"{API_ROOT}/queues/{queue}/messages/{message_id}"
    return f"{API_ROOT}/queues/{queue}/messages/{message_id}?claim_id={claim_id}"


def posted_location(queue: str, message_ids: list[str], max_ids: int) -> str:
    """The Location of a post: its messages while one GET can fetch them all.

    Zaqar lists every id, which made the header grow with the post (33 KB
    for 1,000 messages: many proxies refuse 8 KB, Python's http.client 64
    KiB, after the post committed). Past ``max_ids`` ids a ``?ids=`` URL is
    refused by GET anyway, so a larger post names its queue's messages;
    the body's ``resources`` always lists every message.
    """
    if len(message_ids) <= max_ids:
        return f"{queue_href(queue)}/messages?ids={','.join(message_ids)}"
    return f"{queue_href(queue)}/messages"


def claim_href(queue: str, claim_id: str) -> str:
    return f"{queue_href(queue)}/claims/{claim_id}"


def age(created: float, now: float) -> int:
    """Whole seconds since ``created``, never negative."""
    seconds = int(now - created)
    return seconds if seconds > 0 else 0  # max(0, ...) costs a call more, per message


def message(
    record: MessageRecord, now: float, *, claim_id: str | None = None, history: bool = False
) -> dict[str, Any]:
    """A message as every response shows it.

    zq adds claim_count, and when asked (``include_history``) redrive_count,
    forgiven_count (when above 0), last_failure (when known) and the
    compacted history of a message that moved or whose claims lapsed.

    The href of a claimed message carries its live claim id, as Zaqar's does:
    python-zaqarclient reads the claim id from it to delete the message.
    """
    shown: dict[str, Any] = {
        "id": record.id,
        "href": message_href(record.queue, record.id, claim_id or record.claim_id),
        "ttl": round(record.expires - record.created),
        "age": age(record.created, now),
        "body": orjson.Fragment(record.body),
        "claim_count": record.claim_count,
    }
    if history:
        # Only on request, as history: zaqarclient refuses unknown keys.
        shown["redrive_count"] = record.redrive_count
        # Deliveries not charged to it (breaker, blame split: docs/poison.md),
        # only when there were any: Zaqar's counting shows as before.
        if record.forgiven_count:
            shown["forgiven_count"] = record.forgiven_count
        if record.last_failure is not None:
            shown["last_failure"] = record.last_failure
        if record.history:
            shown["history"] = compact_history(record.history)
    return shown


def claim(record: ClaimRecord, now: float, *, history: bool = False) -> dict[str, Any]:
    """A claim with the messages it holds."""
    return {
        "age": age(record.created, now),
        "ttl": record.ttl,
        "href": claim_href(record.queue, record.id),
        "messages": [
            message(m, now, claim_id=record.id, history=history) for m in record.messages
        ],
    }


def stats(record: QueueStats, queue: str, now: float, *,
          breaker: BreakerState | None = None,
          waiting: int | None = None) -> dict[str, Any]:
    """``{"messages": {"free", "claimed", "delayed", "total"[, "oldest", "newest"]}
    [, "breaker"][, "waiting"]}``.

    ``delayed`` (zq's) counts free messages not claimable yet; ``total``
    stays free + claimed, as Zaqar clients expect. ``breaker`` (zq's) only
    on a queue whose breaker is on, so other queues keep Zaqar's shape.
    ``waiting`` (zq's): the claims waiting for a message on the queue in
    this server (long poll), when the caller counts them.
    """
    counts: dict[str, Any] = {
        "free": record.free,
        "claimed": record.claimed,
        "delayed": record.delayed,
        "total": record.total,
    }
    if record.total and record.oldest and record.newest:
        counts["oldest"] = _stamp(record.oldest, queue, now)
        counts["newest"] = _stamp(record.newest, queue, now)
    shown: dict[str, Any] = {"messages": counts}
    if breaker is not None:
        shown["breaker"] = breaker_state(breaker)
    if waiting is not None:
        shown["waiting"] = waiting
    return shown


def breaker_state(state: BreakerState) -> dict[str, Any]:
    """``{"state", "since", "description"}`` of a queue's breaker (``since`` in ISO 8601 UTC)."""
    return {"state": state.state, "since": iso8601(state.since),
            "description": state.description}


def _stamp(stamp: MessageStamp, queue: str, now: float) -> dict[str, Any]:
    return {
        "id": stamp.id,
        "href": message_href(queue, stamp.id),
        "age": age(stamp.created, now),
        "created": iso8601(stamp.created),
    }


def next_links(path: str, params: Mapping[str, Any]) -> list[dict[str, str]]:
    """The ``links`` list of a page: where the next page starts."""
    query = {k: _query_value(v) for k, v in params.items() if v is not None}
    return [{"rel": "next", "href": f"{path}?{urlencode(query)}"}]


def next_links_keeping(
    path: str, params: Mapping[str, Any], marker: Any,
    parsed: Mapping[str, Any] | None = None,
) -> list[dict[str, str]]:
    """The ``links`` of a page whose next page keeps every query parameter but ``marker``.

    A parameter named in ``parsed`` is written as the resource read it, not
    as the request spelled it: a boolean given as ``True``, ``1`` or ``yes``
    comes back ``true`` (as Zaqar writes it), which a client comparing or
    re-sending the link expects.
    """
    parsed = parsed or {}
    kept = {k: parsed.get(k, v) for k, v in params.items() if k != "marker"}
    return next_links(path, {"marker": marker, **kept})


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
