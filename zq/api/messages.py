"""Messages: ``/v2/queues/{q}/messages`` and ``/v2/queues/{q}/messages/{id}``."""

from __future__ import annotations

import falcon

from zq.api import representation
from zq.api.bodies import read_json
from zq.api.resource import Resource
from zq.errors import InvalidRequest, MessageNotFound


class MessageCollection(Resource):
    def on_post(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        body = read_json(
            req, self.limits, "The message post", cap=self.limits.max_messages_post_size
        )
        ids = self.service.post_messages(
            req.context.project, queue_name, body.document,
            client_id=req.context.client_id, body_size=body.size,
        )
        resp.status = falcon.HTTP_201
        resp.location = representation.posted_location(
            queue_name, ids, self.limits.max_ids_per_request
        )
        resp.media = {
            "resources": [representation.message_href(queue_name, i) for i in ids]
        }

    def on_get(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        ids = req.get_param_as_list("ids")
        if ids is not None:
            self._get_by_ids(req, resp, queue_name, ids)
            return
        marker = req.get_param("marker")
        limit = req.get_param_as_int("limit")
        echo = req.get_param_as_bool("echo", default=False)
        include_claimed = req.get_param_as_bool("include_claimed", default=False)
        include_delayed = req.get_param_as_bool("include_delayed", default=False)
        page = self.service.list_messages(
            req.context.project, queue_name, marker=marker, limit=limit, echo=echo,
            client_id=req.context.client_id, include_claimed=include_claimed,
            include_delayed=include_delayed,
        )
        self.report_unreadable(resp, page.unreadable)
        links = []
        if page.last_marker is not None:
            # Past the messages left out too: the next page does not show them again.
            links = representation.next_links(req.path, {
                "marker": page.last_marker, "limit": limit, "echo": echo or None,
                "include_claimed": include_claimed or None,
                "include_delayed": include_delayed or None,
                "include_history": req.context.include_history or None,
            })
        resp.media = {
            "messages": self.show_messages(req, page.messages),
            "links": links,
        }

    def _get_by_ids(
        self, req: falcon.Request, resp: falcon.Response, queue_name: str, ids: list[str]
    ) -> None:
        found = self.service.get_messages(req.context.project, queue_name, ids)
        if not found.messages and not found.unreadable:
            raise MessageNotFound(f"None of the messages {ids} exist in queue {queue_name!r}.")
        self.report_unreadable(resp, found.unreadable)
        resp.media = {"messages": self.show_messages(req, found.messages)}

    def on_delete(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        ids = req.get_param_as_list("ids")
        pop = req.get_param_as_int("pop")
        if (ids is None) == (pop is None):
            raise InvalidRequest(
                'Deleting messages takes exactly one of the "ids" or "pop" query parameters.'
            )
        if pop is not None and req.get_param("wait") is not None:
            # A pop deletes what it returns: one made for a client that left
            # while waiting could not be undone (a claim is released).
            raise InvalidRequest(
                'A pop cannot wait: "wait" applies to claims only (POST .../claims?wait=S), '
                "whose messages are released when the client leaves before it gets them."
            )
        if pop is not None:
            records = self.service.pop_messages(
                req.context.project, queue_name, pop, client_id=req.context.client_id
            )
            resp.media = {"messages": self.show_messages(req, records)}
            return
        self.service.delete_messages(
            req.context.project, queue_name, ids,
            claim_ids=req.get_param_as_list("claim_ids"),
            client_id=req.context.client_id,
        )
        resp.status = falcon.HTTP_204


class MessageItem(Resource):
    def on_get(
        self, req: falcon.Request, resp: falcon.Response, queue_name: str, message_id: str
    ) -> None:
        record = self.service.get_message(req.context.project, queue_name, message_id)
        [shown] = self.show_messages(req, [record])
        resp.media = shown

    def on_delete(
        self, req: falcon.Request, resp: falcon.Response, queue_name: str, message_id: str
    ) -> None:
        self.service.delete_message(
            req.context.project, queue_name, message_id,
            claim_id=req.get_param("claim_id"), client_id=req.context.client_id,
        )
        resp.status = falcon.HTTP_204


class MessageReject(Resource):
    """``POST /v2/queues/{q}/messages/{id}/reject?claim_id=C`` (zq's poison workflow)."""

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, queue_name: str, message_id: str
    ) -> None:
        body = read_json(req, self.limits, "The reject body")
        self.service.reject_message(
            req.context.project, queue_name, message_id, body.document,
            claim_id=req.get_param("claim_id"), client_id=req.context.client_id,
        )
        resp.status = falcon.HTTP_204
