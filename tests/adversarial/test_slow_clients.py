"""Slow clients against a real ``zq serve``: others keep being answered, the slow are cut.

50 clients at a time (far more than the server's 2 x 4 threads) announce a
body and send one byte of it, or send half a request head, or pile up
answers they never read. Meanwhile a well-behaved client pings and runs
post / claim / delete cycles: every one of its requests must be answered
within 100 ms. The stalled requests must then be closed once the server's
bounds have passed: a body gets 408 (JSON) after ``[server] body_timeout``
counted from its head, however it trickles; a head is dropped after
``[server] timeout``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.adversarial.conftest import BODY_TIMEOUT, HEAD_TIMEOUT
from tests.adversarial.raw_http import head, held_connections, read_until_closed
from tests.e2e.server import ServerProcess

pytestmark = pytest.mark.slow

STALLED = 50
# Seconds every request of the well-behaved client may take. A request held
# up by the stalled clients would wait for their cut (BODY_TIMEOUT, 2 s);
# 0.25 s keeps that apart with room for a loaded 2-core machine.
FAST = 0.25
CYCLES = 5
SLACK = 2.0  # seconds past a bound within which the server must have closed
# A post announcing 100 bytes of body and sending one.
STALLED_UPLOAD = head("POST", "/v2/queues/slow/messages", "Content-Length: 100") + b"["


@pytest.fixture
def http(short_timeout_server: ServerProcess) -> Iterator[httpx.Client]:
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": f"adv-{uuid.uuid4().hex}"}
    with httpx.Client(base_url=f"{short_timeout_server.url}/v2", headers=headers, timeout=2,
                      trust_env=False) as client:
        client.get("/ping")  # the connection is open before the clock starts
        yield client


def timed(http: httpx.Client, method: str, path: str, expected: int,
          **kwargs: object) -> tuple[float, httpx.Response]:
    began = time.perf_counter()
    try:
        response = http.request(method, path, **kwargs)
    except httpx.TimeoutException:
        pytest.fail(f"{method} {path} was not answered within 2 s")
    took = time.perf_counter() - began
    assert response.status_code == expected, response.text
    return took, response


def cycle(http: httpx.Client, queue: str) -> dict[str, float]:
    """A ping, then post, claim and delete one message; seconds each took."""
    took: dict[str, float] = {}
    took["ping"], _ = timed(http, "GET", "/ping", 204)
    took["post"], _ = timed(http, "POST", f"/queues/{queue}/messages", 201,
                            json={"messages": [{"body": {"n": 1}, "ttl": 300}]})
    took["claim"], claimed = timed(http, "POST", f"/queues/{queue}/claims", 201,
                                   params={"limit": 1}, json={"ttl": 60, "grace": 60})
    href = claimed.json()["messages"][0]["href"]
    took["delete"], _ = timed(http, "DELETE", href.removeprefix("/v2"), 204)
    return took


def assert_answered_fast(http: httpx.Client, opened: float, bound: float) -> None:
    """CYCLES cycles all answer within FAST seconds, while the stalled clients are held."""
    queue = f"q-{uuid.uuid4().hex[:8]}"
    slowest: dict[str, float] = {}
    for _ in range(CYCLES):
        for name, seconds in cycle(http, queue).items():
            slowest[name] = max(slowest.get(name, 0.0), seconds)
    # Otherwise the server may have freed itself by closing them: no proof.
    assert time.monotonic() - opened < bound, "the cycles outlasted the stalled clients"
    assert max(slowest.values()) < FAST, f"slowest answers (s): {slowest}"


def test_stalled_uploads_do_not_slow_other_clients(short_timeout_server: ServerProcess,
                                                   http: httpx.Client) -> None:
    with held_connections(short_timeout_server.url, STALLED_UPLOAD, STALLED):
        assert_answered_fast(http, time.monotonic(), BODY_TIMEOUT)


def test_stalled_uploads_get_408_after_the_body_timeout(
        short_timeout_server: ServerProcess) -> None:
    with held_connections(short_timeout_server.url, STALLED_UPLOAD, STALLED) as stalled:
        opened = time.monotonic()
        for connection in stalled:
            answer = read_until_closed(connection, opened, BODY_TIMEOUT + SLACK)
            assert answer.status == 408
            assert answer.header("connection") == "close"
            assert set(json.loads(answer.body)) == {"title", "description"}
            assert answer.closed_after >= BODY_TIMEOUT - 0.1


def test_a_trickling_body_is_cut_at_the_body_timeout(short_timeout_server: ServerProcess) -> None:
    # One byte every 0.2 s keeps the connection busy: the bound is on the
    # whole body, not on the pauses between its pieces.
    upload = head("POST", "/v2/queues/slow/messages", "Content-Length: 1000")
    with held_connections(short_timeout_server.url, upload, 1) as [connection]:
        opened = time.monotonic()
        stop = threading.Event()

        def trickle() -> None:
            while not stop.wait(0.2):
                try:
                    connection.send(b" ")
                except OSError:
                    return

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        try:
            answer = read_until_closed(connection, opened, BODY_TIMEOUT + SLACK)
        finally:
            stop.set()
            sender.join()
    assert answer.status == 408
    assert answer.closed_after >= BODY_TIMEOUT - 0.1


def test_slow_headers_do_not_slow_other_clients_and_are_dropped(
        short_timeout_server: ServerProcess, http: httpx.Client) -> None:
    half_head = b"POST /v2/queues/slow/messages HTTP/1.1\r\nHost: z"
    with held_connections(short_timeout_server.url, half_head, STALLED) as stalled:
        opened = time.monotonic()
        assert_answered_fast(http, opened, HEAD_TIMEOUT)
        for connection in stalled:
            answer = read_until_closed(connection, opened, HEAD_TIMEOUT + SLACK)
            assert answer.data == b""  # dropped without an answer
            assert answer.closed_after >= HEAD_TIMEOUT - 0.1


def test_clients_that_never_read_do_not_slow_other_clients(short_timeout_server: ServerProcess,
                                                           http: httpx.Client) -> None:
    # About 240 KB per answer and a small receive window: each connection's
    # first answer fills the buffers, and its other requests wait behind it.
    queue = f"big-{uuid.uuid4().hex[:8]}"
    timed(http, "POST", f"/queues/{queue}/messages", 201,
          json={"messages": [{"body": "x" * 24_000, "ttl": 300} for _ in range(10)]})
    listing = head("GET", f"/v2/queues/{queue}/messages?echo=true&limit=10")
    with held_connections(short_timeout_server.url, listing * 3, STALLED, receive_buffer=4096):
        time.sleep(0.5)  # let the server fill every connection's buffers
        assert_answered_fast(http, time.monotonic(), float("inf"))
