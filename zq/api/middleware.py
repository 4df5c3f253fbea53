"""Cross-cutting request handling: request ids, access log, required headers, body limits.

Resources can rely on ``req.context.project``, ``req.context.identity``
(set by zq.auth.middleware.Authenticate) and ``req.context.client_id`` for
every ``/v2/...`` route.
"""

from __future__ import annotations

import logging
import time
from typing import Any, BinaryIO

import falcon

from zq import validation
from zq.api.console import is_console_path
from zq.auth.middleware import API_PREFIX, OPERATOR_PATHS
from zq.auth.middleware import require_admin as require_admin  # the hook's old home
from zq.config import Limits
from zq.errors import InvalidRequest, RequestTooLarge
from zq.logs import REQUEST_ID
from zq.storage.records import random_id

REQUEST_ID_HEADER = "X-Openstack-Request-Id"
FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"

ACCESS_LOG = logging.getLogger("zq.access")


class RequestId:
    """Give every response a fresh request id, as Zaqar does, and every log line of it."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        # A uuid4's text, drawn without a UUID object (zq.storage.records.random_id).
        hex_ = random_id()
        req.context.request_id = (
            f"req-{hex_[:8]}-{hex_[8:12]}-{hex_[12:16]}-{hex_[16:20]}-{hex_[20:]}")
        req.context.request_id_token = REQUEST_ID.set(req.context.request_id)

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        resp.set_header(REQUEST_ID_HEADER, req.context.request_id)
        REQUEST_ID.reset(req.context.request_id_token)


class AccessLog:
    """One log line per request: method, path, status, duration, project.

    Never the query string, headers or body: they may hold message
    contents or credentials.
    """

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.started = time.perf_counter()

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        if not ACCESS_LOG.isEnabledFor(logging.INFO):
            return
        duration_ms = round((time.perf_counter() - req.context.started) * 1000, 3)
        status = falcon.code_to_http_status(resp.status)[:3]
        # makeRecord + handle is what .info() does, without looking up the
        # caller's file and line (which no access line shows): a tenth of
        # the line's cost, on every request.
        ACCESS_LOG.handle(ACCESS_LOG.makeRecord(
            ACCESS_LOG.name, logging.INFO, "", 0, "%s %s %s",
            (req.method, req.path, status), None,
            extra={
                "method": req.method, "path": req.path, "status": int(status),
                "duration_ms": duration_ms,
                "project": getattr(req.context, "project", None),
            },
        ))


class CappedStream:
    """A body stream of unknown length that refuses to yield more than ``limit`` bytes."""

    def __init__(self, stream: BinaryIO, limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        # Ask for one byte past the limit at most, so an oversized body is
        # detected without ever buffering more than limit + 1 bytes.
        allowed = self.limit + 1 - self.consumed
        chunk = self.stream.read(allowed if size is None or size < 0 else min(size, allowed))
        self.consumed += len(chunk)
        if self.consumed > self.limit:
            raise RequestTooLarge(
                f"The request body is larger than the {self.limit} bytes accepted."
            )
        return chunk


def is_chunked(req: falcon.Request) -> bool:
    """Whether the body comes without a Content-Length (Transfer-Encoding: chunked)."""
    encoding = (req.get_header("Transfer-Encoding") or "").lower()
    return req.content_length is None and "chunked" in encoding


def has_body(req: falcon.Request) -> bool:
    """Whether the request carries a body (a Content-Length above 0, or chunked)."""
    return bool(req.content_length) or is_chunked(req)


class RequestRules:
    """The checks Zaqar applies to every ``/v2/...`` request.

    Accept must allow JSON (406), form-encoded bodies are refused (400; a
    form Content-Type with no body is let through, as Zaqar does),
    bodies over ``limits.max_request_body`` are refused before being read
    (400, as Zaqar: its client ignores a 413; a chunked body is cut off as
    soon as it passes the limit), and
    Client-ID must be a UUID (400). Also reads ``include_history``, zq's
    opt-in to show dead letter history.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        path = req.path
        if path in OPERATOR_PATHS:  # not the JSON API: text for a scraper
            return
        if is_console_path(path):  # the console's page and files, for a browser
            return
        if not req.client_accepts_json:
            raise falcon.HTTPNotAcceptable(
                description="This server only produces application/json; "
                "send an Accept header that allows it."
            )
        # has_body and is_chunked, with Content-Length parsed and
        # Transfer-Encoding read once (each would read them again).
        length = req.content_length
        chunked = length is None and "chunked" in (
            req.env.get("HTTP_TRANSFER_ENCODING") or "").lower()
        if (length or chunked) and (
            (req.content_type or "").split(";")[0].strip().lower() == FORM_MEDIA_TYPE
        ):
            raise InvalidRequest(
                "Form-encoded request bodies are not supported; send application/json."
            )
        if length is not None and length > self.limits.max_request_body:
            raise RequestTooLarge(
                f"The request body is {length} bytes; at most "
                f"{self.limits.max_request_body} are accepted."
            )
        if chunked:
            req.stream = CappedStream(req.stream, self.limits.max_request_body)
        req.context.include_history = req.get_param_as_bool(
            "include_history", default=False
        )
        if path.startswith(API_PREFIX):
            req.context.client_id = validation.client_id(req.env.get("HTTP_CLIENT_ID"))
