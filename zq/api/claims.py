"""Claims: ``/v2/queues/{q}/claims`` and ``/v2/queues/{q}/claims/{c}``."""

from __future__ import annotations

import falcon

from zq.api import representation
from zq.api.bodies import read_json
from zq.api.resource import Resource
from zq.poison.consumers import HEADER, Suspected


class ClaimCollection(Resource):
    def on_post(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        body = read_json(req, self.limits, "The claim body")
        try:
            claim = self.service.claim(
                req.context.project, queue_name, body.document,
                limit=req.get_param_as_int("limit"), client_id=req.context.client_id,
            )
        except Suspected as suspected:
            # Nothing for a consumer that let a claim lapse (zq.poison.consumers):
            # 204 as for an empty queue, and which claim it must show alive.
            resp.status = falcon.HTTP_204
            resp.set_header(HEADER, suspected.lapsed_claim_id)
            return
        if claim is not None:
            self.report_unreadable(resp, claim.unreadable)
        if claim is None or not claim.messages:
            resp.status = falcon.HTTP_204
            return
        resp.status = falcon.HTTP_201
        resp.location = representation.claim_href(queue_name, claim.id)
        resp.media = {"messages": self.show_messages(req, claim.messages, claim.id)}


class ClaimItem(Resource):
    def on_get(
        self, req: falcon.Request, resp: falcon.Response, queue_name: str, claim_id: str
    ) -> None:
        claim = self.service.get_claim(req.context.project, queue_name, claim_id)
        self.report_unreadable(resp, claim.unreadable)
        resp.media = representation.claim(
            claim, self.clock.now(), history=req.context.include_history
        )

    def on_patch(
        self, req: falcon.Request, resp: falcon.Response, queue_name: str, claim_id: str
    ) -> None:
        body = read_json(req, self.limits, "The claim body")
        self.service.renew_claim(
            req.context.project, queue_name, claim_id, body.document,
            client_id=req.context.client_id,
        )
        resp.status = falcon.HTTP_204

    def on_delete(
        self, req: falcon.Request, resp: falcon.Response, queue_name: str, claim_id: str
    ) -> None:
        self.service.release_claim(
            req.context.project, queue_name, claim_id, client_id=req.context.client_id
        )
        resp.status = falcon.HTTP_204
