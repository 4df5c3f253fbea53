"""The request path's per-request shortcuts keep what they replace (issue 31)."""

from __future__ import annotations

import re
import uuid
from types import SimpleNamespace
from typing import Any

import falcon
import falcon.testing

from zq.api.metrics import OTHER_METHOD, RequestMetrics
from zq.api.middleware import REQUEST_ID_HEADER, RequestId
from zq.storage.records import random_id


def test_random_ids_have_the_form_of_a_uuid4_hex() -> None:
    drawn = [random_id() for _ in range(2000)]
    assert len(set(drawn)) == len(drawn)
    for text in drawn:
        parsed = uuid.UUID(hex=text)
        assert parsed.hex == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_request_ids_are_uuid4_text_after_req() -> None:
    class Hello:
        def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
            resp.media = {}

    app = falcon.App(middleware=[RequestId()])
    app.add_route("/", Hello())
    client = falcon.testing.TestClient(app)
    seen = {client.simulate_get("/").headers[REQUEST_ID_HEADER] for _ in range(50)}
    assert len(seen) == 50
    for header in seen:
        assert re.fullmatch(r"req-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", header)
        assert uuid.UUID(header[4:]).version == 4


class CountingHistogram:
    """A histogram whose labels() calls are counted, each series keeping its values."""

    def __init__(self) -> None:
        self.lookups: list[tuple[str, ...]] = []
        self.series: dict[tuple[str, ...], list[float]] = {}

    def labels(self, *labels: str) -> Any:
        self.lookups.append(labels)
        values = self.series.setdefault(labels, [])
        return SimpleNamespace(observe=values.append)


def test_request_metrics_look_each_series_up_once() -> None:
    histogram = CountingHistogram()
    middleware = RequestMetrics(SimpleNamespace(metrics=SimpleNamespace(
        http_latency=histogram)))

    def request(method: str, template: str | None, status: Any) -> None:
        req = SimpleNamespace(method=method, uri_template=template, context=SimpleNamespace())
        resp = SimpleNamespace(status=status)
        middleware.process_request(req, resp)  # type: ignore[arg-type]
        middleware.process_response(req, resp, None, True)  # type: ignore[arg-type]

    for _ in range(3):
        request("POST", "/v2/queues/{queue_name}/messages", 201)
        request("POST", "/v2/queues/{queue_name}/messages", falcon.HTTP_400)
        request("GET", None, falcon.HTTP_404)
    for made_up in ("BREW", "WHEN", "FETCH"):
        request(made_up, None, falcon.HTTP_405)
    assert histogram.lookups == [
        ("POST", "/v2/queues/{queue_name}/messages", "201"),
        ("POST", "/v2/queues/{queue_name}/messages", "400"),
        ("GET", "unmatched", "404"),
        (OTHER_METHOD, "unmatched", "405"),
    ]
    assert [len(values) for values in histogram.series.values()] == [3, 3, 3, 3]
