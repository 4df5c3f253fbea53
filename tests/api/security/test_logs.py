"""Structured logs: a request id on every line, no bodies and no credentials."""

from __future__ import annotations

import io
import logging
import re

import orjson
import pytest

from tests.api.security.test_signed_urls import signed_client
from zq import logs
from zq.api.middleware import REQUEST_ID_HEADER
from zq.config import LogConfig


@pytest.fixture
def captured():
    """Everything logged, in the configured format; the root logger restored after."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = io.StringIO()

    def configure(fmt: str = "json") -> io.StringIO:
        logs.configure(LogConfig(format=fmt), stream=stream)
        return stream

    yield configure
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])


def test_no_body_token_or_signature_in_logs(tenants, storage, monkeypatch, captured):
    stream = captured()
    secret_body = "top-secret-body-7f3a"
    tenants.a.post("/v2/queues/q/messages", json={"messages": [{"body": secret_body}]})
    posted = tenants.a.get("/v2/queues/q/messages?echo=true", headers={
        "Authorization": f"Bearer {tenants.a.token}"})
    assert secret_body in posted.text
    share = tenants.a.post("/v2/queues/q/share", json={}).json
    signed_client(tenants.app, share).get("/v2/queues/q/messages")
    tenants.a.get("/v2/queues/q/messages", headers={"X-Auth-Token": "zqt_wrong-token-9c1e"})

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(storage.queues, "stats", broken)
    failed = tenants.a.get("/v2/queues/q/stats")
    assert failed.status_code == 500

    text = stream.getvalue()
    for secret in (secret_body, tenants.a.token, "zqt_wrong-token-9c1e", share["signature"]):
        assert secret not in text
    lines = [orjson.loads(line) for line in text.splitlines()]
    access = [line for line in lines if line["logger"] == "zq.access"]
    assert [(a["method"], a["path"], a["status"]) for a in access] == [
        ("POST", "/v2/queues/q/messages", 201),
        ("GET", "/v2/queues/q/messages", 200),
        ("POST", "/v2/queues/q/share", 200),
        ("GET", "/v2/queues/q/messages", 200),
        ("GET", "/v2/queues/q/messages", 401),
        ("GET", "/v2/queues/q/stats", 500),
    ]
    assert {a["project"] for a in access[:4]} == {tenants.a.project}
    assert access[4]["project"] is None  # never authenticated
    assert all(a["duration_ms"] >= 0 for a in access)
    # Every line of the failed request, the traceback's too, carries its id.
    request_id = failed.headers[REQUEST_ID_HEADER]
    of_failed = [line for line in lines if line["request_id"] == request_id]
    assert [line["logger"] for line in of_failed] == ["zq.api", "zq.access"]
    assert "RuntimeError: boom" in of_failed[0]["exception"]
    assert all(line["request_id"] for line in lines)
    assert len({line["request_id"] for line in access}) == len(access)


def test_key_value_format_and_no_id_outside_requests(api, captured):
    stream = captured("text")
    logging.getLogger("zq.test").warning("outside a request")
    result = api.get("/v2/queues")
    first, second = stream.getvalue().splitlines()
    assert "request_id=- " in first and 'message="outside a request"' in first
    assert f"request_id={result.headers[REQUEST_ID_HEADER]} " in second
    assert "method=GET path=/v2/queues status=200" in second


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("stream", "expected"), [(Terminal(), "console"), (io.StringIO(), "json")])
def test_auto_format_is_for_people_on_a_terminal_and_json_elsewhere(stream, expected):
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        logs.configure(LogConfig(), stream=stream)  # the default: auto
        logging.getLogger("zq.server").info("zq serving %s", "http://127.0.0.1:8888/v2")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
    line = stream.getvalue().strip()
    if expected == "json":
        assert orjson.loads(line)["message"] == "zq serving http://127.0.0.1:8888/v2"
    else:
        assert re.fullmatch(r"\d\d:\d\d:\d\d INFO +zq serving http://127\.0\.0\.1:8888/v2", line)
