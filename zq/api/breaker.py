"""``POST /v2/queues/{q}/breaker``: force a queue's outage breaker (zq's poison workflow)."""

from __future__ import annotations

import falcon

from zq.api.bodies import read_json
from zq.api.resource import Resource


class QueueBreaker(Resource):
    def on_post(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        body = read_json(req, self.limits, "The breaker body")
        self.service.force_breaker(req.context.project, queue_name, body.document)
        resp.status = falcon.HTTP_204
