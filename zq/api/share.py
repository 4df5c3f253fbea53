"""Pre-signed URLs: ``POST /v2/queues/{q}/share``."""

from __future__ import annotations

import falcon

from zq import validation
from zq.api import representation
from zq.api.bodies import read_json
from zq.api.resource import Resource
from zq.auth import signed_urls
from zq.clock import Clock
from zq.config import SignedUrlsConfig
from zq.service import QueueService


class QueueShare(Resource):
    """Signs paths and methods of one queue for whoever holds the signature."""

    def __init__(
        self, service: QueueService, clock: Clock, config: SignedUrlsConfig
    ) -> None:
        super().__init__(service, clock)
        self.config = config

    def on_post(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        if not self.config.secret_key:
            raise falcon.HTTPServiceUnavailable(
                title="Pre-signed URLs disabled",
                description="This server has no [signed_urls] secret_key configured, "
                "so it cannot sign URLs.",
            )
        if req.context.identity.grant is not None:
            raise falcon.HTTPForbidden(
                title="Forbidden", description="A pre-signed URL cannot sign other URLs."
            )
        queue = validation.queue_name(queue_name, self.limits)
        body = read_json(req, self.limits, "The share request")
        document = body.document
        if isinstance(document, dict) and document.get("project_id") not in (
            None, req.context.project
        ):
            raise falcon.HTTPForbidden(
                title="Forbidden", description="URLs can only be signed for your own project."
            )
        signed = signed_urls.sign(
            self.config.secret_key, representation.queue_href(queue), req.context.project,
            document, now=self.clock.now(), max_lifetime=self.config.max_expires,
        )
        resp.media = signed.as_dict()
