"""Queues: ``/v2/queues``, ``/v2/queues/{q}``, its stats and purge."""

from __future__ import annotations

import falcon

from zq import queue_filter
from zq.api import representation
from zq.api.bodies import read_json
from zq.api.resource import Resource
from zq.errors import InvalidRequest

PATCH_MEDIA_TYPE = "application/openstack-messaging-v2.0-json-patch"


# Query parameters of a queue listing that are not metadata filters.
LISTING_OPTIONS = frozenset({"marker", "limit", "detailed", "name", "with_count",
                             "include_history"})


def metadata_filters(req: falcon.Request) -> dict[str, object]:
    """Every other query parameter, as Zaqar: ``key=value`` keeps queues with that metadata."""
    filters: dict[str, object] = {}
    for key, value in req.params.items():
        if key in LISTING_OPTIONS:
            continue
        if not isinstance(value, str):
            raise InvalidRequest(f"The metadata filter {key!r} takes one value.")
        filters[key] = queue_filter.filter_value(value)
    return filters


class QueueCollection(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        project = req.context.project
        marker = req.get_param("marker")
        limit = req.get_param_as_int("limit")
        detailed = req.get_param_as_bool("detailed", default=False)
        name = req.get_param("name")
        with_count = req.get_param_as_bool("with_count", default=False)
        page = self.service.list_queues(
            project, marker=marker, limit=limit, detailed=detailed, name=name,
            with_count=with_count, metadata=metadata_filters(req),
        )
        queues = []
        for queue in page.queues:
            shown = {"name": queue.name, "href": representation.queue_href(queue.name)}
            if detailed:
                shown["metadata"] = queue.metadata
            queues.append(shown)
        links = []
        if page.queues:
            # The next page keeps every filter (Zaqar's link drops the metadata ones).
            links = representation.next_links_keeping(
                req.path, req.params, page.queues[-1].name,
                {"detailed": detailed, "with_count": with_count,
                 "include_history": req.context.include_history},
            )
        body = {"queues": queues, "links": links}
        if page.count is not None:
            body["count"] = page.count
        resp.media = body


class QueueItem(Resource):
    def on_put(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        body = read_json(
            req, self.limits, "Queue metadata", cap=self.limits.max_queue_metadata
        )
        created = self.service.create_queue(req.context.project, queue_name, body.document)
        resp.status = falcon.HTTP_201 if created else falcon.HTTP_204
        resp.location = representation.queue_href(queue_name)

    def on_get(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        resp.media = self.service.queue_metadata(req.context.project, queue_name)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        media_type = (req.content_type or "").split(";")[0].strip().lower()
        if media_type != PATCH_MEDIA_TYPE:
            raise falcon.HTTPUnsupportedMediaType(
                description=f"PATCH of a queue takes Content-Type {PATCH_MEDIA_TYPE}.",
                headers={"Accept-Patch": PATCH_MEDIA_TYPE},
            )
        body = read_json(
            req, self.limits, "The metadata patch", cap=self.limits.max_queue_metadata
        )
        resp.media = self.service.patch_metadata(
            req.context.project, queue_name, body.document
        )

    def on_delete(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        self.service.delete_queue(req.context.project, queue_name)
        resp.status = falcon.HTTP_204


class QueueStatsResource(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        project = req.context.project
        report = self.service.queue_report(project, queue_name)
        waiting = self.waiting.waiting(project, queue_name) if self.waiting else None
        resp.media = representation.stats(report.stats, queue_name, self.clock.now(),
                                          breaker=report.breaker, waiting=waiting)


class QueuePurge(Resource):
    def on_post(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        body = read_json(req, self.limits, "The purge body")
        self.service.purge_queue(req.context.project, queue_name, body.document)
        resp.status = falcon.HTTP_204
