"""Pools and flavors (admin only): ``/v2/pools[/{p}]`` and ``/v2/flavors[/{f}]``."""

from __future__ import annotations

from typing import Any

import falcon

from zq.api import representation
from zq.api.bodies import read_json
from zq.auth import require_admin
from zq.errors import NotFound
from zq.pooling.admin import PoolAdmin
from zq.pooling.registry import FlavorDef, PoolDef

POOLS = f"{representation.API_ROOT}/pools"
FLAVORS = f"{representation.API_ROOT}/flavors"


def pool_view(pool: PoolDef, *, detailed: bool) -> dict[str, Any]:
    """A pool as GET shows it (``options`` only when detailed, as in Zaqar)."""
    shown: dict[str, Any] = {
        "name": pool.name,
        "href": f"{POOLS}/{pool.name}",
        "uri": pool.uri,
        "weight": pool.weight,
        "flavor": pool.flavor,
    }
    if detailed:
        shown["options"] = pool.options
    return shown


def flavor_view(flavor: FlavorDef, *, detailed: bool) -> dict[str, Any]:
    """A flavor as GET shows it (``capabilities`` only when detailed, as in Zaqar)."""
    shown: dict[str, Any] = {
        "name": flavor.name,
        "href": f"{FLAVORS}/{flavor.name}",
        "pool_list": flavor.pool_list,
    }
    if detailed:
        shown["capabilities"] = flavor.capabilities
    return shown


class AdminResource:
    """Base of the admin resources (each class is decorated: admin role only).

    falcon.before on a class wraps the responders that class defines, so
    every subclass carries the decorator itself.
    """

    def __init__(self, admin: PoolAdmin) -> None:
        self.admin = admin

    def page_links(
        self, req: falcon.Request, items: list[Any], *, detailed: bool
    ) -> list[dict[str, str]]:
        """The next page keeps every query parameter (``detailed``, ``limit``...)."""
        if not items:
            return []
        return representation.next_links_keeping(
            req.path, req.params, items[-1].name,
            {"detailed": detailed, "include_history": req.context.include_history},
        )


@falcon.before(require_admin)
class PoolCollection(AdminResource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        limit = req.get_param_as_int("limit")
        detailed = req.get_param_as_bool("detailed", default=False)
        found = self.admin.list_pools(req.get_param("marker"), limit)
        resp.media = {
            "pools": [pool_view(p, detailed=detailed) for p in found],
            "links": self.page_links(req, found, detailed=detailed),
        }


@falcon.before(require_admin)
class PoolItem(AdminResource):
    def on_put(self, req: falcon.Request, resp: falcon.Response, pool_name: str) -> None:
        body = read_json(req, self.admin.limits, "The pool")
        self.admin.put_pool(pool_name, body.document)
        resp.status = falcon.HTTP_201
        resp.location = f"{POOLS}/{pool_name}"

    def on_get(self, req: falcon.Request, resp: falcon.Response, pool_name: str) -> None:
        detailed = req.get_param_as_bool("detailed", default=False)
        resp.media = pool_view(self.admin.get_pool(pool_name), detailed=detailed)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, pool_name: str) -> None:
        body = read_json(req, self.admin.limits, "The pool patch")
        resp.media = pool_view(self.admin.update_pool(pool_name, body.document), detailed=True)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, pool_name: str) -> None:
        self.admin.delete_pool(pool_name)
        resp.status = falcon.HTTP_204


@falcon.before(require_admin)
class FlavorCollection(AdminResource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        limit = req.get_param_as_int("limit")
        detailed = req.get_param_as_bool("detailed", default=False)
        found = self.admin.list_flavors(req.get_param("marker"), limit)
        resp.media = {
            "flavors": [flavor_view(f, detailed=detailed) for f in found],
            "links": self.page_links(req, found, detailed=detailed),
        }


@falcon.before(require_admin)
class FlavorItem(AdminResource):
    def on_put(self, req: falcon.Request, resp: falcon.Response, flavor_name: str) -> None:
        body = read_json(req, self.admin.limits, "The flavor")
        self.admin.put_flavor(flavor_name, body.document)
        resp.status = falcon.HTTP_201
        resp.location = f"{FLAVORS}/{flavor_name}"

    def on_get(self, req: falcon.Request, resp: falcon.Response, flavor_name: str) -> None:
        detailed = req.get_param_as_bool("detailed", default=False)
        resp.media = flavor_view(self.admin.get_flavor(flavor_name), detailed=detailed)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, flavor_name: str) -> None:
        body = read_json(req, self.admin.limits, "The flavor patch")
        resp.media = flavor_view(
            self.admin.update_flavor(flavor_name, body.document), detailed=True
        )

    def on_delete(self, req: falcon.Request, resp: falcon.Response, flavor_name: str) -> None:
        self.admin.delete_flavor(flavor_name)
        resp.status = falcon.HTTP_204


@falcon.before(require_admin)
class PoolingOff:
    """Pools and flavors when pooling is off: 404 saying how to turn it on."""

    def _off(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        raise NotFound(
            "Pooling is not enabled on this server; start it with `zq serve --pooling` "
            "(or [pooling] enabled = true)."
        )

    on_get = on_put = on_patch = on_delete = _off


ADMIN_ROUTES: list[tuple[str, type[AdminResource]]] = [
    (POOLS, PoolCollection),
    (f"{POOLS}/{{pool_name}}", PoolItem),
    (FLAVORS, FlavorCollection),
    (f"{FLAVORS}/{{flavor_name}}", FlavorItem),
]
