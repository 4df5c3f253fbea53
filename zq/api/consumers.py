"""``GET /v2/queues/{q}/consumers``: who claims from a queue (zq.poison.consumers),
and how many claims each has waiting for a message (zq.metrics.waiting)."""

from __future__ import annotations

from typing import Any

import falcon

from zq.api.resource import Resource


class QueueConsumers(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        project = req.context.project
        found = self.service.consumers(project, queue_name)
        rows: list[dict[str, Any]] = [consumer.document() for consumer in found]
        if self.waiting is not None:
            waits = self.waiting.clients(project, queue_name)
            for row in rows:
                row["waiting"] = waits.pop(row["client_id"], 0)
            # A consumer that waits and has not claimed anything yet is one too.
            rows += [{"client_id": client_id, "last_claim": None, "live_claims": 0,
                      "lapsed_claims": 0, "suspected": False, "waiting": count}
                     for client_id, count in sorted(waits.items())]
        resp.media = {"consumers": rows}
