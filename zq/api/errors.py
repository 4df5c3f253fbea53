"""Every error becomes a JSON ``{"title", "description"}`` response.

``STATUS`` is the one table from zq.errors classes to HTTP status codes.
falcon's own errors (unknown route, wrong method, bad query parameter) get
the same body shape, and an unexpected exception is logged and answered
with a 500 that reveals nothing internal.
"""

from __future__ import annotations

import logging
from typing import Any

import falcon
import orjson

from zq import errors

LOG = logging.getLogger("zq.api")

STATUS: dict[type[errors.ZqError], str] = {
    errors.InvalidRequest: falcon.HTTP_400,
    errors.ClaimMismatch: falcon.HTTP_400,
    errors.MessageIsClaimed: falcon.HTTP_403,
    errors.Forbidden: falcon.HTTP_403,
    errors.NotFound: falcon.HTTP_404,
    errors.Conflict: falcon.HTTP_409,
    errors.StorageUnavailable: falcon.HTTP_503,
    errors.EncryptionFailure: falcon.HTTP_500,
    errors.ZqError: falcon.HTTP_500,
}

# Descriptions for falcon errors raised without one (e.g. an unknown route).
_DEFAULT_DESCRIPTIONS = {
    404: "The requested resource does not exist.",
    405: "The method is not allowed on this resource.",
    406: "This server only produces application/json.",
    413: "The request body is too large.",
}


def status_of(error: errors.ZqError) -> str:
    """The HTTP status of a zq error: the nearest class in STATUS."""
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return falcon.HTTP_500


def error_body(title: str, description: str) -> bytes:
    """The JSON body of every error response."""
    return orjson.dumps({"title": title, "description": description})


def handle_zq_error(
    req: falcon.Request, resp: falcon.Response, error: errors.ZqError, params: Any
) -> None:
    status = status_of(error)
    if falcon.code_to_http_status(status).startswith("5"):
        LOG.error("%s %s failed: %s", req.method, req.path, error)
    resp.status = status
    if isinstance(error, errors.StorageUnavailable):
        resp.set_header("Retry-After", str(error.retry_after))
    resp.content_type = falcon.MEDIA_JSON
    resp.data = error_body(error.title, error.description)


def handle_unexpected(
    req: falcon.Request, resp: falcon.Response, error: Exception, params: Any
) -> None:
    LOG.exception("Unexpected error in %s %s", req.method, req.path)
    resp.status = falcon.HTTP_500
    resp.content_type = falcon.MEDIA_JSON
    resp.data = error_body(
        "Internal server error",
        "The server failed to handle the request; the error has been logged.",
    )


def serialize_http_error(
    req: falcon.Request, resp: falcon.Response, error: falcon.HTTPError
) -> None:
    """falcon's own errors, in the same JSON shape whatever the client accepts."""
    code = error.status_code
    title = error.title or falcon.code_to_http_status(code)
    description = error.description or _DEFAULT_DESCRIPTIONS.get(code, title)
    resp.content_type = falcon.MEDIA_JSON
    resp.data = error_body(title, description)


def install(app: falcon.App) -> None:
    """Register the handlers and the serializer on ``app``."""
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(errors.ZqError, handle_zq_error)
    app.set_error_serializer(serialize_http_error)
