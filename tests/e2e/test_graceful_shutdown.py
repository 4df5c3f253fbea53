"""SIGTERM while slow requests are in flight: they finish, then ``zq serve`` exits 0.

More slow posts than the server has threads (2 workers x 4 threads) trickle
their bodies in when SIGTERM reaches the master; each must still get its
real answer (201, with its message stored), never a reset connection, and
the process must exit 0 well within the graceful timeout, whether SIGTERM
reaches only the master (``kill PID``, Docker) or every process of the group
(systemd's default ``KillMode=control-group``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import ServerProcess, clean_environment

pytestmark = pytest.mark.slow

SLOW_POSTS = 10  # more than the 8 threads, so some wait for a free thread
CHUNKS = 20
CHUNK_PAUSE = 0.1  # seconds: each post takes about 2 s to send
GRACEFUL_TIMEOUT = 30  # zq's default [server] timeout, also gunicorn's graceful_timeout


def trickled(body: bytes, started: threading.Event) -> Iterator[bytes]:
    """The body in CHUNKS pieces, pausing between them: a slow client."""
    step = -(-len(body) // CHUNKS)
    for offset in range(0, len(body), step):
        yield body[offset:offset + step]
        started.set()
        time.sleep(CHUNK_PAUSE)


@pytest.mark.parametrize("group", [False, True], ids=["master", "process-group"])
def test_sigterm_completes_slow_requests_in_flight(tmp_path: Path, group: bool) -> None:
    env = clean_environment(tmp_path / "data")
    storage = f"sqlite:///{tmp_path / 'zq.sqlite3'}"
    server = ServerProcess(tmp_path / "server.log", env, "--workers", "2", "--storage", storage)
    server.start()
    project = f"e2e-{uuid.uuid4().hex}"
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project,
               "Content-Type": "application/json"}
    answers: dict[int, object] = {}
    started = [threading.Event() for _ in range(SLOW_POSTS)]

    def post(index: int) -> None:
        body = b'{"messages": [{"body": {"i": %d, "pad": "%s"}}]}' % (index, b"x" * 150_000)
        try:
            with httpx.Client(timeout=60, trust_env=False) as http:
                # A stated length, as real clients send, so the server reads the
                # whole body from the slow socket.
                response = http.post(
                    f"{server.url}/v2/queues/slow/messages",
                    headers={**headers, "Content-Length": str(len(body))},
                    content=trickled(body, started[index]),
                )
            answers[index] = response
        except httpx.HTTPError as error:
            answers[index] = error

    threads = [threading.Thread(target=post, args=(i,)) for i in range(SLOW_POSTS)]
    try:
        for thread in threads:
            thread.start()
        for event in started:
            assert event.wait(10), "a slow post never started"
        sent_term = time.monotonic()
        status = server.stop(timeout=GRACEFUL_TIMEOUT + 10, group=group)
        stopped_after = time.monotonic() - sent_term
    finally:
        server.stop()
        for thread in threads:
            thread.join(30)

    assert status == 0, server.log()
    assert stopped_after < GRACEFUL_TIMEOUT, stopped_after
    assert "zq stopped" in server.log()
    assert "Traceback" not in server.log()
    failures = {i: a for i, a in answers.items() if not isinstance(a, httpx.Response)}
    assert failures == {}, failures
    statuses = sorted(a.status_code for a in answers.values())
    assert statuses == [201] * SLOW_POSTS, [a.text for a in answers.values()]

    # What was answered 201 is stored: a new server on the same file lists it.
    again = ServerProcess(tmp_path / "again.log", env, "--storage", storage)
    try:
        again.start()
        found: list[int] = []
        href = "/v2/queues/slow/messages?echo=true&limit=20"
        while href:
            page = httpx.get(f"{again.url}{href}", headers=headers, trust_env=False).json()
            found.extend(message["body"]["i"] for message in page["messages"])
            href = page["links"][0]["href"] if page["messages"] else ""
    finally:
        assert again.stop() == 0
    assert sorted(found) == list(range(SLOW_POSTS))
