"""Operations: ``/v2/ping`` and ``/v2/health``."""

from __future__ import annotations

import falcon

from zq.api.resource import Resource
from zq.auth import require_admin
from zq.clock import Clock
from zq.errors import StorageUnavailable
from zq.notifications.status import StatusFile
from zq.service import QueueService


class Ping(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if not self.service.ping():
            raise StorageUnavailable("The storage backend is unreachable.")
        resp.status = falcon.HTTP_204

    on_head = on_get


class Health(Resource):
    """The backends' probes and, under ``zq serve``, the notifier's state."""

    def __init__(self, service: QueueService, clock: Clock,
                 notifier: StatusFile | None = None) -> None:
        super().__init__(service, clock)
        self.notifier = notifier

    @falcon.before(require_admin)
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        report = self.service.health()
        if self.notifier is not None:
            # Beside the backends' reports (or the pools'): a dead notifier
            # sends nothing while the API looks healthy (issue 25).
            report["notifier"] = self.notifier.read()
        resp.media = report
