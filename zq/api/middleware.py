"""Cross-cutting request handling: request ids, required headers, body limits.

Resources can rely on ``req.context.project`` and ``req.context.client_id``
for every ``/v2/...`` route.
"""

from __future__ import annotations

import uuid
from typing import Any

import falcon

from zq import validation
from zq.config import Limits
from zq.errors import InvalidRequest

REQUEST_ID_HEADER = "X-Openstack-Request-Id"
FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"
API_PREFIX = "/v2/"


class RequestId:
    """Give every response a fresh request id, as Zaqar does."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.request_id = f"req-{uuid.uuid4()}"

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        resp.set_header(REQUEST_ID_HEADER, req.context.request_id)


class RequestRules:
    """The checks Zaqar applies to every ``/v2/...`` request.

    Accept must allow JSON (406), form-encoded bodies are refused (400),
    bodies over ``limits.max_request_body`` are refused before being read
    (413), Client-ID must be a UUID and X-Project-ID present (400).
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if not req.client_accepts_json:
            raise falcon.HTTPNotAcceptable(
                description="This server only produces application/json; "
                "send an Accept header that allows it."
            )
        if req.content_type and req.content_type.split(";")[0].strip().lower() == FORM_MEDIA_TYPE:
            raise InvalidRequest(
                "Form-encoded request bodies are not supported; send application/json."
            )
        length = req.content_length
        if length is not None and length > self.limits.max_request_body:
            raise falcon.HTTPContentTooLarge(
                description=f"The request body is {length} bytes; at most "
                f"{self.limits.max_request_body} are accepted."
            )
        if req.path.startswith(API_PREFIX):
            req.context.client_id = validation.client_id(req.get_header("Client-ID"))
            req.context.project = validation.project_id(
                req.get_header("X-Project-ID"), self.limits
            )


def require_admin(req: falcon.Request, resp: falcon.Response, resource: Any, params: Any) -> None:
    """falcon hook: only admins (``X-Roles`` holding ``admin``) may pass."""
    roles = {r.strip().lower() for r in (req.get_header("X-Roles") or "").split(",")}
    if "admin" not in roles:
        raise falcon.HTTPForbidden(
            title="Forbidden", description="This operation requires the admin role."
        )
