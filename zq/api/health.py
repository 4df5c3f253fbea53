"""Operations: ``/v2/ping`` and ``/v2/health``."""

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
