"""Reading JSON request bodies with a size cap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import falcon
import orjson

from zq import validation
from zq.api.middleware import is_chunked
from zq.errors import InvalidRequest


@dataclass(frozen=True, slots=True)
class JsonBody:
    document: Any  # None when the body was empty
    size: int  # bytes read


def read_json(req: falcon.Request, cap: int, what: str) -> JsonBody:
    """The request's JSON document, refusing more than ``cap`` bytes (400).

    The declared Content-Length is checked before anything is read; a
    chunked body (no Content-Length) is read at most ``cap + 1`` bytes, from
    the stream RequestRules capped at ``limits.max_request_body``.
    """
    if req.content_length is not None:
        validation.body_size(req.content_length, cap, what)
    stream = req.stream if is_chunked(req) else req.bounded_stream
    raw = stream.read(cap + 1)
    validation.body_size(len(raw), cap, what)
    if not raw:
        return JsonBody(None, 0)
    if not raw.strip():
        # As Zaqar: a body was sent, and it is not JSON (an absent body is fine).
        raise InvalidRequest(f"{what} is not valid JSON: the body holds only whitespace.")
    try:
        return JsonBody(orjson.loads(raw), len(raw))
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"{what} is not valid JSON: {exc}.") from None
