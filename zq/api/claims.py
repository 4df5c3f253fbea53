"""Claims: ``/v2/queues/{q}/claims`` and ``/v2/queues/{q}/claims/{c}``."""

from __future__ import annotations

from functools import partial

import falcon

from zq import validation
from zq.api import representation
from zq.api.bodies import read_json
from zq.api.resource import Resource
from zq.poison.consumers import HEADER, Suspected
from zq.service.opening import OpenedClaim
from zq.waiting import ENVIRON_KEY, ClaimWait

# On every answer to a claim that asked to wait: the seconds honoured. A
# client tells zq, which waits, from Zaqar, which ignores ``wait`` (zq.client).
WAIT_HEADER = "X-Zq-Wait"


class ClaimCollection(Resource):
    def on_post(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        body = read_json(req, self.limits, "The claim body")
        wait = validation.claim_wait(req.get_param("wait"), self.limits)
        if wait > 0:
            resp.set_header(WAIT_HEADER, f"{wait:g}")
        limit = req.get_param_as_int("limit")
        project, client_id = req.context.project, req.context.client_id
        try:
            claim = self.service.claim(project, queue_name, body.document, limit=limit,
                                       client_id=client_id)
        except Suspected as suspected:
            # Nothing for a consumer that let a claim lapse (zq.poison.consumers):
            # 204 as for an empty queue, and which claim it must show alive.
            resp.status = falcon.HTTP_204
            resp.set_header(HEADER, suspected.lapsed_claim_id)
            return
        if claim is not None:
            self.report_unreadable(resp, claim.unreadable)
        if wait > 0:
            # zq.buffered_wsgi holds a claim that found nothing until it can
            # deliver (zq.waiting), and releases one its client left.
            req.env[ENVIRON_KEY] = self._wait_marker(project, queue_name, wait, claim, limit,
                                                     client_id)
        if claim is None or not claim.messages:
            resp.status = falcon.HTTP_204
            return
        resp.status = falcon.HTTP_201
        resp.location = representation.claim_href(queue_name, claim.id)
        resp.media = {"messages": self.show_messages(req, claim.messages, claim.id)}


    def _wait_marker(self, project: str, queue: str, wait: float, claim: OpenedClaim | None,
                     limit: int | None, client_id: str | None) -> ClaimWait:
        marker = ClaimWait(project, queue, wait)
        if claim is not None and claim.messages:
            asked = self.limits.default_page_size if limit is None else limit
            marker.claimed = len(claim.messages)
            marker.more = len(claim.messages) >= asked
            marker.release = partial(self.service.release_claim, project, queue, claim.id,
                                     client_id=client_id)
        return marker


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
