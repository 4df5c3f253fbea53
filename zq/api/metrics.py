"""``GET /metrics`` and the HTTP latency histogram (see docs/metrics.md)."""

from __future__ import annotations

import time
from typing import Any

import falcon

from zq import validation
from zq.auth.middleware import require_admin
from zq.config import Limits
from zq.metrics.setup import Telemetry

METRICS_PATH = "/metrics"
# The text format 0.0.4 that every Prometheus reads (zq's names are all
# plain ASCII, so generate_latest's output is exactly that format).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# The methods HTTP defines (RFC 9110, and PATCH) keep their name as a label;
# any other token a client sends is OTHER_METHOD. Every label must come from
# a bounded set: a series per made-up method would let any client, even an
# unauthenticated one, grow every scrape and each worker's file without end.
KNOWN_METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}
)
OTHER_METHOD = "other"


def method_label(method: str) -> str:
    """The ``method`` label of a request: its method if HTTP defines it, else ``other``."""
    return method if method in KNOWN_METHODS else OTHER_METHOD


class MetricsResource:
    """The Prometheus text exposition; the admin role when auth is on."""

    def __init__(self, telemetry: Telemetry, *, auth: bool) -> None:
        self.telemetry = telemetry
        self.auth = auth

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if self.auth:
            require_admin(req, resp, self, {})
        resp.content_type = CONTENT_TYPE
        resp.data = self.telemetry.scrape()


RATES_ROUTE = "/v2/queues/{queue_name}/rates"


class QueueRates:
    """``GET /v2/queues/{queue_name}/rates``: a queue's recent message rates.

    Counted from the backends' event logs by the metrics tail (one source
    with the counters of ``/metrics``), so present only when metrics are on.
    A queue nobody used lately has all zeros, as a queue never created does.
    """

    def __init__(self, telemetry: Telemetry, limits: Limits) -> None:
        self.telemetry = telemetry
        self.limits = limits

    def on_get(self, req: falcon.Request, resp: falcon.Response, queue_name: str) -> None:
        validation.queue_name(queue_name, self.limits)
        resp.media = self.telemetry.rates(req.context.project, queue_name)


class RequestMetrics:
    """falcon middleware: every request's latency by method, route template and status."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.histogram = telemetry.metrics.http_latency
        # The labelled series by (method, route, status), looked up once each:
        # Histogram.labels checks and joins its labels under a lock on every
        # call. Bounded: methods and route templates are a fixed set, and
        # statuses are the few the application sets.
        self._series: dict[tuple[str, str, Any], Any] = {}

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.metrics_started = time.perf_counter()

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        started = getattr(req.context, "metrics_started", None)
        if started is None:
            return
        # The route template, never the path: queue names would make a series each.
        # The status is one the application set, the template one it declared.
        # The method label, not the method: any token a client sends is not a key.
        key = (method_label(req.method), req.uri_template or "unmatched", resp.status)
        series = self._series.get(key)
        if series is None:
            status = falcon.code_to_http_status(resp.status)[:3]
            series = self._series[key] = self.histogram.labels(key[0], key[1], status)
        series.observe(time.perf_counter() - started)
