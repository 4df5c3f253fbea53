"""API discovery: ``GET /`` (the versions document) and ``GET /v2`` (the home document).

Both follow Zaqar 23 (zaqar/transport/wsgi/version.py and v2_0/homedoc.py):
clients find the v2 API from ``/`` and its resources from the JSON home
document (draft-nottingham-json-home-03). The home document lists the
resources zq serves with Zaqar's relation names; the admin ones (pools,
flavors) only when pooling is on, as Zaqar lists them only in admin mode.
"""

from __future__ import annotations

from typing import Any

import falcon
import orjson

JSON_HOME = "application/json-home"
HOME_MAX_AGE = 86400  # seconds, as Zaqar sends

V2 = {
    "id": "2",
    "status": "CURRENT",
    "updated": "2014-9-24T04:06:47Z",
    "media-types": [
        {"base": "application/json", "type": "application/vnd.openstack.messaging-v2+json"}
    ],
    "links": [{"href": "/v2/", "rel": "self"}],
}
VERSIONS = {"versions": [V2]}


def _rel(template: str, allow: list[str], *, post: bool = False,
         **href_vars: str) -> dict[str, Any]:
    """One resource of the home document: a template (or plain href) with its hints."""
    hints: dict[str, Any] = {"allow": allow, "formats": {"application/json": {}}}
    if post:
        hints["accept-post"] = ["application/json"]
    link: dict[str, Any] = {"href-template" if "{" in template or href_vars else "href":
                            template}
    if href_vars:
        link["href-vars"] = href_vars
    link["hints"] = hints
    return link


_Q = {"queue_name": "param/queue_name"}
_QUEUE_RESOURCES = {
    "rel/queues": _rel("/v2/queues{?marker,limit,detailed}", ["GET"],
                       marker="param/marker", limit="param/queue_limit",
                       detailed="param/detailed"),
    "rel/queue": _rel("/v2/queues/{queue_name}", ["GET", "PUT", "DELETE", "PATCH"], **_Q),
    "rel/queue_stats": _rel("/v2/queues/{queue_name}/stats", ["GET"], **_Q),
    "rel/queue_share": _rel("/v2/queues/{queue_name}/share", ["POST"], post=True, **_Q),
    "rel/queue_purge": _rel("/v2/queues/{queue_name}/purge", ["POST"], post=True, **_Q),
    "rel/messages": _rel(
        "/v2/queues/{queue_name}/messages{?marker,limit,echo,include_claimed}", ["GET"],
        **_Q, marker="param/marker", limit="param/messages_limit", echo="param/echo",
        include_claimed="param/include_claimed"),
    "rel/post_messages": _rel("/v2/queues/{queue_name}/messages", ["POST"], post=True, **_Q),
    "rel/messages_delete": _rel("/v2/queues/{queue_name}/messages{?ids,pop}", ["DELETE"],
                                **_Q, ids="param/ids", pop="param/pop"),
    "rel/message_delete": _rel(
        "/v2/queues/{queue_name}/messages/{message_id}{?claim}", ["DELETE"],
        **_Q, message_id="param/message_id", claim="param/claim_id"),
    "rel/message_get": _rel("/v2/queues/{queue_name}/messages/{message_id}", ["GET"],
                            **_Q, message_id="param/message_id"),
    "rel/claim": _rel("/v2/queues/{queue_name}/claims/{claim_id}", ["GET"],
                      **_Q, claim_id="param/claim_id"),
    "rel/post_claim": _rel("/v2/queues/{queue_name}/claims{?limit}", ["POST"], post=True,
                           **_Q, limit="param/claim_limit"),
    "rel/patch_claim": _rel("/v2/queues/{queue_name}/claims/{claim_id}", ["PATCH"],
                            post=True, **_Q, claim_id="param/claim_id"),
    "rel/delete_claim": _rel("/v2/queues/{queue_name}/claims/{claim_id}", ["DELETE"],
                             **_Q, claim_id="param/claim_id"),
    "rel/subscriptions_get": _rel(
        "/v2/queues/{queue_name}/subscriptions{?marker,limit}", ["GET"],
        **_Q, marker="param/marker", limit="param/subscription_limit"),
    "rel/subscriptions_post": _rel("/v2/queues/{queue_name}/subscriptions", ["POST"],
                                   post=True, **_Q, limit="param/subscription_limit"),
    "rel/subscription": _rel("/v2/queues/{queue_name}/subscriptions/{subscriptions_id}",
                             ["GET", "DELETE"], **_Q,
                             subscriptions_id="param/subscriptions_id"),
    "rel/subscription_patch": _rel(
        "/v2/queues/{queue_name}/subscriptions/{subscriptions_id}", ["PATCH"], post=True,
        **_Q, subscriptions_id="param/subscriptions_id"),
    "rel/ping": {"href-template": "/v2/ping",
                 "hints": {"allow": ["GET"], "formats": {"application/json": {}}}},
    "rel/health": _rel("/v2/health", ["GET"]),
    # zq: the caller's project and roles (the console asks it for the admin role).
    "rel/identity": _rel("/v2/identity", ["GET"]),
}
_POOLING_RESOURCES = {
    "rel/pools": _rel("/v2/pools{?detailed,limit,marker}", ["GET"],
                      detailed="param/detailed", limit="param/pool_limit",
                      marker="param/marker"),
    "rel/pool": _rel("/v2/pools/{pool_name}", ["GET", "PUT", "PATCH", "DELETE"],
                     pool_name="param/pool_name"),
    "rel/flavors": _rel("/v2/flavors{?detailed,limit,marker}", ["GET"],
                        detailed="param/detailed", limit="param/flavor_limit",
                        marker="param/marker"),
    "rel/flavor": _rel("/v2/flavors/{flavor_name}", ["GET", "PUT", "PATCH", "DELETE"],
                       flavor_name="param/flavor_name"),
}


def home_document(*, pooling: bool) -> dict[str, Any]:
    """The ``/v2`` home document; pool and flavor resources only with pooling."""
    resources = dict(_QUEUE_RESOURCES)
    if pooling:
        resources.update(_POOLING_RESOURCES)
    return {"resources": resources}


class Versions:
    """``GET /``: 300 Multiple Choices with the versions this server speaks."""

    def __init__(self) -> None:
        self._body = orjson.dumps(VERSIONS)

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.status = falcon.HTTP_300
        resp.content_type = falcon.MEDIA_JSON
        resp.data = self._body


class Home:
    """``GET /v2``: the JSON home document, cacheable for a day."""

    def __init__(self, *, pooling: bool) -> None:
        self._body = orjson.dumps(home_document(pooling=pooling))

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = JSON_HOME
        resp.cache_control = [f"max-age={HOME_MAX_AGE}"]
        resp.data = self._body
