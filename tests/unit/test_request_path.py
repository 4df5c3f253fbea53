"""The request path's per-request shortcuts keep what they replace (issue 31)."""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import uuid
from types import SimpleNamespace
from typing import Any

import falcon
import falcon.testing
import pytest

from zq import validation
from zq.api.metrics import OTHER_METHOD, RequestMetrics
from zq.api.middleware import REQUEST_ID_HEADER, RequestId
from zq.config import Limits
from zq.errors import InvalidRequest
from zq.storage.records import (
    RANDOM_ID_BATCH,
    ClaimRecord,
    MessageRecord,
    NewMessage,
    random_id,
)


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


def test_ids_drawn_ahead_are_not_shared_with_a_forked_child() -> None:
    random_id()  # the parent holds ids drawn ahead
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.write(write, "".join(random_id() for _ in range(RANDOM_ID_BATCH)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(child, 0)
    in_child = {text[i:i + 32] for i in range(0, len(text), 32)}
    in_parent = {random_id() for _ in range(RANDOM_ID_BATCH)}
    assert len(in_child) == RANDOM_ID_BATCH
    assert not in_child & in_parent


def test_ids_drawn_by_threads_at_once_are_all_different() -> None:
    drawn: list[list[str]] = [[] for _ in range(8)]

    def draw(into: list[str]) -> None:
        for _ in range(5 * RANDOM_ID_BATCH):
            into.append(random_id())

    threads = [threading.Thread(target=draw, args=(into,)) for into in drawn]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for into in drawn for i in into]
    assert len(set(every)) == len(every) == 8 * 5 * RANDOM_ID_BATCH


def test_a_client_id_is_checked_once_and_a_bad_one_every_time() -> None:
    mixed = "3381AF92-2B9E-11E3-B191-71861300734C"
    for _ in range(3):
        assert validation.client_id(mixed) == "3381af92-2b9e-11e3-b191-71861300734c"
    for _ in range(3):
        with pytest.raises(InvalidRequest, match="UUID"):
            validation.client_id("not-a-uuid")
        with pytest.raises(InvalidRequest, match="required"):
            validation.client_id("")
    for n in range(validation._CLIENT_IDS_KEPT + 10):  # bounded
        validation.client_id(str(uuid.UUID(int=n)))
    assert len(validation._client_ids) <= validation._CLIENT_IDS_KEPT


def test_json_text_shape_counts_opening_brackets_and_finds_long_digit_runs() -> None:
    assert validation.json_text_shape(b'{"a": [1, {"b": "[{"}]}') == (5, False)
    assert validation.json_text_shape(b'[12345678901234567890]') == (1, True)
    assert validation.json_text_shape(b"") == (0, False)


def test_posted_messages_in_range_and_out_of_it() -> None:
    limits = Limits()
    ttl = limits.min_message_ttl
    checked = validation.posted_messages(
        {"messages": [{"body": 1, "ttl": ttl, "delay": 0}, {"body": 2}]}, limits)
    assert checked == [validation.PostedMessage(1, ttl, 0),
                       validation.PostedMessage(2, None, None)]
    for bad in (True, float(ttl), ttl - 1, limits.max_message_ttl + 1, str(ttl)):
        with pytest.raises(InvalidRequest, match=r"messages\[1\]\.ttl"):
            validation.posted_messages({"messages": [{"body": 1}, {"body": 1, "ttl": bad}]},
                                       limits)
    for bad in (False, -1, limits.max_message_delay + 1, 1.0):
        with pytest.raises(InvalidRequest, match=r"messages\[0\]\.delay"):
            validation.posted_messages({"messages": [{"body": 1, "delay": bad}]}, limits)


def _as_dataclasses_makes_it(cls: Any) -> Any:
    """The same record class with dataclasses' own __init__ (frozen, slotted)."""
    return dataclasses.make_dataclass(
        cls.__name__, [(f.name, f.type, f) for f in dataclasses.fields(cls)],
        frozen=True, slots=True)


@pytest.mark.parametrize("cls", [NewMessage, MessageRecord, ClaimRecord])
def test_quick_init_takes_what_the_dataclass_init_takes(cls: Any) -> None:
    plain = _as_dataclasses_makes_it(cls)
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    values = {name: f"v-{name}" for name in required}
    made, expected = cls(**values), plain(**values)
    assert dataclasses.astuple(made) == dataclasses.astuple(expected)
    assert dataclasses.astuple(cls(*values.values())) == dataclasses.astuple(expected)
    every = {f.name: f"w-{f.name}" for f in dataclasses.fields(cls)}
    assert dataclasses.astuple(cls(**every)) == dataclasses.astuple(plain(**every))
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.__setattr__(required[0], "changed")
    with pytest.raises(TypeError):
        cls(**dict(list(values.items())[1:]))  # one required field missing
    with pytest.raises(TypeError):
        cls(**values, not_a_field=1)
    assert made == cls(**values)
    assert dataclasses.replace(made, **{required[0]: "x"}) == cls(**{**values, required[0]: "x"})


def test_quick_init_gives_each_record_its_own_default_list() -> None:
    def record() -> MessageRecord:
        return MessageRecord(id="a", queue="q", body="{}", ttl=1, created=1.0, expires=2.0,
                             client_id=None, claim_id=None, claim_count=0)

    first, second = record(), record()
    assert first.history == [] and first.history is not second.history
