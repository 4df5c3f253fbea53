"""Reading JSON request bodies with a size cap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import falcon
import orjson

from zq import validation
from zq.api.middleware import is_chunked
from zq.config import Limits
from zq.errors import InvalidRequest


@dataclass(frozen=True, slots=True)
class JsonBody:
    document: Any  # None when the body was empty
    size: int  # bytes read


def read_json(
    req: falcon.Request, limits: Limits, what: str, *, cap: int | None = None
) -> JsonBody:
    """The request's JSON document, refusing more than ``cap`` bytes (400).

    ``cap`` defaults to ``limits.max_request_body``. The declared
    Content-Length is checked before anything is read; a chunked body (no
    Content-Length) is read at most ``cap + 1`` bytes, from the stream
    RequestRules capped at ``limits.max_request_body``. A document nested
    deeper than ``limits.max_json_depth`` is refused (400) here, the one
    place every body is parsed: orjson reads 1024 levels but writes 254.
    So is an integer past 64 bits, which orjson would read as a float.
    """
    cap = limits.max_request_body if cap is None else cap
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
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest(f"{what} is not valid JSON: {exc}.") from None
    brackets, long_digits = validation.json_text_shape(raw)
    # Fewer brackets than the limit cannot nest deeper: most bodies skip the walk.
    if brackets > limits.max_json_depth:
        validation.json_depth(document, limits.max_json_depth, what)
    # Without a long run of digits no integer can be past 64 bits: most
    # bodies skip the second, exact parse.
    if long_digits:
        validation.exact_integers(raw, what)
    return JsonBody(document, len(raw))
