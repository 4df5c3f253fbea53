"""``GET /v2/queues/{q}/consumers``: who claims from a queue (zq.poison.consumers)."""

from __future__ import annotations

import falcon

from zq.api.resource import Resource


class QueueConsumers(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        found = self.service.consumers(req.context.project, queue_name)
        resp.media = {"consumers": [consumer.document() for consumer in found]}
