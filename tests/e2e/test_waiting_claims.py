"""Waiting claims on real ``zq serve`` processes: across workers and servers, disconnects, SIGTERM.

Two servers of two workers each share one SQLite file, which sends no
notification: a message posted through one worker reaches the claims
waiting in the other three through the re-check (``[server]
wait_recheck_interval``, 0.1 s here). The assertions are about what the
clients got; the only bound on time is far from the waits asked for.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.e2e.server import ServerProcess, clean_environment

pytestmark = pytest.mark.slow

WAITERS = 8


def settings(tmp_path: Path) -> tuple[dict[str, str], str]:
    env = clean_environment(tmp_path / "data")
    env["ZQ_SERVER_WAIT_RECHECK_INTERVAL"] = "0.1"
    env["ZQ_NOTIFICATIONS_ENABLED"] = "false"
    return env, f"sqlite:///{tmp_path / 'zq.sqlite3'}"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ServerProcess]]:
    tmp_path = tmp_path_factory.mktemp("waiting")
    env, storage = settings(tmp_path)
    started: list[ServerProcess] = []
    try:
        for n in range(2):  # one after the other: the first migrates the file
            started.append(ServerProcess(tmp_path / f"server-{n}.log", env, "--workers", "2",
                                         "--storage", storage).start())
        yield started
    finally:
        for server in started:
            server.stop()


def headers(project: str) -> dict[str, str]:
    return {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project,
            "Content-Type": "application/json"}


def test_every_message_goes_to_exactly_one_of_8_waiters_on_2_servers(servers):
    project = f"e2e-{uuid.uuid4().hex}"
    got: list[list[str]] = []
    lock = threading.Lock()

    def wait_for_one(url: str) -> None:
        with httpx.Client(timeout=30, trust_env=False) as http:
            answer = http.post(f"{url}/v2/queues/jobs/claims", params={"limit": 1, "wait": 15},
                               headers=headers(project), json={"ttl": 300})
        ids = [m["id"] for m in answer.json()["messages"]] if answer.status_code == 201 else []
        with lock:
            got.append(ids)

    # Many connections per server: each lands on either of its two workers.
    waiters = [threading.Thread(target=wait_for_one, args=(servers[n % 2].url,))
               for n in range(WAITERS)]
    for waiter in waiters:
        waiter.start()
    time.sleep(0.5)  # most of them are waiting by now; the others claim at once
    posted = []
    with httpx.Client(timeout=30, trust_env=False) as http:
        for n in range(WAITERS):
            answer = http.post(f"{servers[n % 2].url}/v2/queues/jobs/messages",
                               headers=headers(project), json={"messages": [{"body": n}]})
            posted.append(answer.json()["resources"][0].rsplit("/", 1)[1])
    for waiter in waiters:
        waiter.join(30)
    assert sorted(len(ids) for ids in got) == [1] * WAITERS, got
    assert sorted(i for ids in got for i in ids) == sorted(posted)
    stats = httpx.get(f"{servers[0].url}/v2/queues/jobs/stats", headers=headers(project),
                      trust_env=False).json()["messages"]
    assert (stats["claimed"], stats["free"]) == (WAITERS, 0)


def test_a_client_that_leaves_while_waiting_holds_no_message(servers):
    project = f"e2e-{uuid.uuid4().hex}"
    url = urlsplit(servers[0].url)
    body = b"{}"
    request = (f"POST /v2/queues/jobs/claims?wait=15 HTTP/1.1\r\nHost: {url.netloc}\r\n"
               f"Client-ID: {uuid.uuid4()}\r\nX-Project-ID: {project}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
               ).encode() + body
    for _ in range(4):  # on both workers, most likely
        with socket.create_connection((url.hostname, url.port), timeout=5) as client:
            client.sendall(request)
            time.sleep(0.2)  # it waits; then the client goes
    time.sleep(0.3)
    with httpx.Client(timeout=30, trust_env=False) as http:
        http.post(f"{servers[1].url}/v2/queues/jobs/messages", headers=headers(project),
                  json={"messages": [{"body": 1}]})
        time.sleep(0.5)  # a waiter still registered would have claimed it by now
        stats = http.get(f"{servers[0].url}/v2/queues/jobs/stats",
                         headers=headers(project)).json()["messages"]
        assert (stats["free"], stats["claimed"]) == (1, 0)


def test_sigterm_answers_waiting_claims_204_at_once(tmp_path):
    env, storage = settings(tmp_path)
    server = ServerProcess(tmp_path / "server.log", env, "--workers", "2", "--storage",
                           storage).start()
    project = f"e2e-{uuid.uuid4().hex}"
    answers: list[object] = []

    def wait() -> None:
        try:
            with httpx.Client(timeout=60, trust_env=False) as http:
                answers.append(http.post(f"{server.url}/v2/queues/jobs/claims",
                                         params={"wait": 20}, headers=headers(project),
                                         json={}).status_code)
        except httpx.HTTPError as error:
            answers.append(error)

    waiters = [threading.Thread(target=wait) for _ in range(4)]
    try:
        for waiter in waiters:
            waiter.start()
        with httpx.Client(timeout=10, trust_env=False) as http:
            deadline = time.monotonic() + 15
            # All four wait in the server before it is told to stop (a loaded
            # machine may take a while to send them).
            while http.get(f"{server.url}/v2/queues/jobs/stats",
                           headers=headers(project)).json().get("waiting") != 4:
                assert time.monotonic() < deadline, "the claims never all waited"
                time.sleep(0.05)
        sent = time.monotonic()
        status = server.stop(timeout=40)
        stopped_after = time.monotonic() - sent
    finally:
        server.stop()
        for waiter in waiters:
            waiter.join(30)
    assert status == 0, server.log()
    assert answers == [204] * 4
    # The claims asked to wait 20 s; the stop did not wait for them.
    assert stopped_after < 10, stopped_after
    assert "Traceback" not in server.log()
