"""Operations: ``/v2/ping``, ``/v2/health`` and the ``/v2`` home document."""

from __future__ import annotations

import falcon

from zq.api.resource import Resource
from zq.auth import require_admin
from zq.errors import StorageUnavailable


class Ping(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if not self.service.ping():
            raise StorageUnavailable("The storage backend is unreachable.")
        resp.status = falcon.HTTP_204

    on_head = on_get


class Health(Resource):
    @falcon.before(require_admin)
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = self.service.health()


def _link(template: str, allow: list[str], **href_vars: str) -> dict[str, object]:
    link: dict[str, object] = {
        "href-template" if href_vars else "href": template,
        "hints": {"allow": allow, "formats": {"application/json": {}}},
    }
    if href_vars:
        link["href-vars"] = href_vars
    return link


_QUEUE = "param/queue_name"
HOME_DOCUMENT = {
    "resources": {
        "rel/queues": _link(
            "/v2/queues{?marker,limit,detailed,name,with_count}", ["GET"],
            marker="param/marker", limit="param/queue_limit", detailed="param/detailed",
            name="param/name", with_count="param/with_count",
        ),
        "rel/queue": _link(
            "/v2/queues/{queue_name}", ["PUT", "GET", "PATCH", "DELETE"], queue_name=_QUEUE
        ),
        "rel/queue_stats": _link(
            "/v2/queues/{queue_name}/stats", ["GET"], queue_name=_QUEUE
        ),
        "rel/queue_purge": _link(
            "/v2/queues/{queue_name}/purge", ["POST"], queue_name=_QUEUE
        ),
        "rel/messages": _link(
            "/v2/queues/{queue_name}/messages{?marker,limit,echo,include_claimed,"
            "include_delayed,ids,claim_ids,pop}",
            ["GET", "POST", "DELETE"], queue_name=_QUEUE,
        ),
        "rel/message": _link(
            "/v2/queues/{queue_name}/messages/{message_id}{?claim_id}", ["GET", "DELETE"],
            queue_name=_QUEUE, message_id="param/message_id",
        ),
        "rel/claims": _link(
            "/v2/queues/{queue_name}/claims{?limit}", ["POST"], queue_name=_QUEUE
        ),
        "rel/claim": _link(
            "/v2/queues/{queue_name}/claims/{claim_id}", ["GET", "PATCH", "DELETE"],
            queue_name=_QUEUE, claim_id="param/claim_id",
        ),
        "rel/ping": _link("/v2/ping", ["GET", "HEAD"]),
        "rel/health": _link("/v2/health", ["GET"]),
    }
}


class Home(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = HOME_DOCUMENT
