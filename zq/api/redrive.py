"""``POST /v2/queues/{dlq}/redrive``: send dead letters back (zq's poison workflow)."""

from __future__ import annotations

import falcon

from zq.api.bodies import read_json
from zq.api.resource import Resource


class QueueRedrive(Resource):
    def on_post(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        body = read_json(req, self.limits, "The redrive body")
        result = self.service.redrive(req.context.project, queue_name, body.document,
                                      client_id=req.context.client_id)
        resp.status = falcon.HTTP_200
        resp.media = result.as_dict()
