"""Subscriptions: ``/v2/queues/{q}/subscriptions``, ``.../{id}`` and ``.../{id}/confirm``.

Zaqar v2's resource (zaqar/transport/wsgi/v2_0/subscriptions.py): status
codes, body shapes and the ``links`` of a listing as it answers them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import falcon

from zq.api import representation
from zq.api.bodies import read_json
from zq.clock import Clock
from zq.config import Limits
from zq.storage.records import SubscriptionRecord
from zq.subscriptions import SubscriptionService


def subscriptions_href(queue: str) -> str:
    return f"{representation.queue_href(queue)}/subscriptions"


def shown(record: SubscriptionRecord) -> dict[str, Any]:
    """A subscription as Zaqar shows it (``source`` is the queue)."""
    return {"id": record.id, "source": record.queue, "subscriber": record.subscriber,
            "ttl": record.ttl, "age": record.age, "options": record.options,
            "confirmed": record.confirmed}


class SubscriptionResource:
    """Base of the three resources: the subscription service and the clock."""

    def __init__(self, service: SubscriptionService, clock: Clock) -> None:
        self.service = service
        self.clock = clock

    @property
    def limits(self) -> Limits:
        return self.service.limits


class SubscriptionCollection(SubscriptionResource):
    def on_post(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        body = read_json(req, self.limits, "The subscription")
        # Zaqar's 409 for a confirmed duplicate carries the Location too.
        resp.location = subscriptions_href(queue_name)
        sid, _created = self.service.create(req.context.project, queue_name, body.document)
        # 201 also for a repeated create of an unconfirmed subscription (Zaqar).
        resp.status = falcon.HTTP_201
        resp.media = {"subscription_id": sid}

    def on_get(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        marker = req.get_param("marker")
        limit = req.get_param_as_int("limit")
        page = self.service.list(req.context.project, queue_name, marker=marker, limit=limit)
        links = []
        if page:
            # Zaqar's next link: the parameters given, marker moved to the page's last id.
            query: dict[str, Any] = {}
            if marker is not None:
                query["marker"] = marker
            if limit is not None:
                query["limit"] = limit
            query["marker"] = page[-1].id
            links = [{"rel": "next",
                      "href": f"{subscriptions_href(queue_name)}?{urlencode(query)}"}]
        resp.media = {"subscriptions": [shown(s) for s in page], "links": links}


class SubscriptionItem(SubscriptionResource):
    def on_get(self, req: falcon.Request, resp: falcon.Response, queue_name: str,
               subscription_id: str) -> None:
        resp.media = shown(self.service.get(req.context.project, queue_name, subscription_id))

    def on_patch(self, req: falcon.Request, resp: falcon.Response, queue_name: str,
                 subscription_id: str) -> None:
        body = read_json(req, self.limits, "The subscription")
        self.service.update(req.context.project, queue_name, subscription_id, body.document)
        resp.status = falcon.HTTP_204
        resp.location = req.path

    def on_delete(self, req: falcon.Request, resp: falcon.Response, queue_name: str,
                  subscription_id: str) -> None:
        self.service.delete(req.context.project, queue_name, subscription_id)
        resp.status = falcon.HTTP_204


class SubscriptionConfirm(SubscriptionResource):
    def on_put(self, req: falcon.Request, resp: falcon.Response, queue_name: str,
               subscription_id: str) -> None:
        body = read_json(req, self.limits, "The confirmation")
        self.service.confirm(req.context.project, queue_name, subscription_id, body.document)
        resp.status = falcon.HTTP_204
        resp.location = req.path


SUBSCRIPTION_ROUTES: list[tuple[str, type[SubscriptionResource]]] = [
    ("/v2/queues/{queue_name}/subscriptions", SubscriptionCollection),
    ("/v2/queues/{queue_name}/subscriptions/{subscription_id}", SubscriptionItem),
    ("/v2/queues/{queue_name}/subscriptions/{subscription_id}/confirm", SubscriptionConfirm),
]
