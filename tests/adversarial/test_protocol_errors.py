"""Requests the HTTP server refuses before zq sees them: 400, no body, connection closed.

granian's HTTP/1 parser (hyper) answers these itself and offers no hook to
shape the answer, so their body is empty rather than zq's JSON error
(docs/security.md says so). What must hold: a 400, never a 5xx, and the
connection closed, so nothing that follows the bad request on the
connection is read as another request.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.adversarial.raw_http import head, held_connections, read_until_closed
from tests.e2e.server import ServerProcess

pytestmark = pytest.mark.slow

BAD_REQUESTS = {
    "two Content-Length": head("POST", "/v2/queues/q/messages", "Content-Length: 2",
                               "Content-Length: 3") + b"[]",
    "control byte in the path": head("GET", "/v2/p\x01ng"),
    "space in the path": head("GET", "/v2/p ng"),
    "no HTTP version": b"GET /v2/ping\r\nHost: zq\r\n\r\n",
    "header without a colon": b"GET /v2/ping HTTP/1.1\r\nHost zq\r\n\r\n",
}


@pytest.mark.parametrize("request_bytes", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_a_malformed_request_is_refused_400_without_a_body(
        short_timeout_server: ServerProcess, request_bytes: bytes) -> None:
    with held_connections(short_timeout_server.url, request_bytes, 1) as [connection]:
        answer = read_until_closed(connection, time.monotonic(), 5)
    assert answer.status == 400, answer.data
    assert answer.header("content-length") == "0"
    assert answer.body == b""
    assert answer.data.count(b"HTTP/1.1 ") == 1


def test_chunked_with_a_content_length_is_answered_once_then_closed(
        short_timeout_server: ServerProcess) -> None:
    # A request smuggling attempt: read as chunked (RFC 9112 6.3), the empty
    # body is zq's 400, and the request hidden after it is never answered.
    smuggled = (head("POST", "/v2/queues/q/messages", "Transfer-Encoding: chunked",
                     "Content-Length: 4") + b"0\r\n\r\n" + head("GET", "/v2/ping"))
    with held_connections(short_timeout_server.url, smuggled, 1) as [connection]:
        answer = read_until_closed(connection, time.monotonic(), 5)
    assert answer.status == 400
    assert answer.header("connection") == "close"
    assert json.loads(answer.body)["title"] == "Invalid request"
    assert answer.data.count(b"HTTP/1.1 ") == 1
