"""A real ``zq serve``: its notifier is supervised, and a bad allowed_hosts stops the start.

Issue 25: a malformed ``allowed_hosts`` entry used to print "zq serving",
then kill the notifier with a traceback while the API served on, healthy
to every look; a notifier that died for any reason stayed dead.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import ServerProcess, clean_environment, run_zq
from tests.notifications.helpers import Receiver, receiver

HEADERS = {"X-Project-ID": "e2e-supervision", "X-Roles": "admin"}


@pytest.fixture
def hook() -> Iterator[Receiver]:
    with receiver() as server:
        yield server


def environment(tmp_path: Path, allowed_hosts: str) -> dict[str, str]:
    env = clean_environment(tmp_path / "data")
    env.update({
        "ZQ_STORAGE": f"sqlite:///{tmp_path}/zq.sqlite3",
        "ZQ_NOTIFICATIONS_ALLOWED_HOSTS": allowed_hosts,
        "ZQ_NOTIFICATIONS_POLL_INTERVAL": "0.1",
        "ZQ_METRICS_ENABLED": "false",
    })
    return env


def get(server: ServerProcess, path: str) -> httpx.Response:
    return httpx.get(f"{server.url}/v2{path}", trust_env=False, timeout=10,
                     headers={"Client-ID": str(uuid.uuid4()), **HEADERS})


def notifier(server: ServerProcess) -> dict:  # type: ignore[type-arg]
    response = get(server, "/health")
    assert response.status_code == 200, response.text
    return response.json()["notifier"]


def wait_for(condition, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.parametrize("entry", ["http://127.0.0.1:19110", "127.0.0.1:abc"])
def test_a_malformed_allowed_hosts_entry_refuses_to_start(tmp_path: Path, entry: str) -> None:
    result = run_zq("serve", "--port", "0", env=environment(tmp_path, entry), timeout=60)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zq: error: notifications.allowed_hosts")
    assert repr(entry) in lines[0]
    assert "zq serving" not in result.stdout + result.stderr


def test_a_killed_notifier_shows_in_health_and_the_log_and_is_restarted(
        tmp_path: Path, hook: Receiver) -> None:
    env = environment(tmp_path, f"127.0.0.1:{hook.port}")
    server = ServerProcess(tmp_path / "serve.log", env, "--workers", "1").start()
    try:
        wait_for(lambda: notifier(server)["state"] == "running")
        first = notifier(server)
        assert first["restarts"] == 0
        os.kill(first["pid"], signal.SIGKILL)
        # Dead: said by health (until the restart, a second later) and by the log.
        wait_for(lambda: f"notifier (pid {first['pid']}) died (killed by SIGKILL)"
                 in server.log())
        wait_for(lambda: notifier(server)["restarts"] == 1)
        now = notifier(server)
        assert now["state"] == "running" and now["pid"] != first["pid"]
        assert now["last_exit"] == "killed by SIGKILL"
        assert "notifier restarted" in server.log()
        # The new notifier delivers.
        subscribed = httpx.post(
            f"{server.url}/v2/queues/orders/subscriptions", trust_env=False,
            headers={"Client-ID": str(uuid.uuid4()), **HEADERS},
            json={"subscriber": hook.url("/orders"), "ttl": 3600})
        assert subscribed.status_code == 201, subscribed.text
        posted = httpx.post(
            f"{server.url}/v2/queues/orders/messages", trust_env=False,
            headers={"Client-ID": str(uuid.uuid4()), **HEADERS},
            json={"messages": [{"body": {"n": 1}, "ttl": 300}]})
        assert posted.status_code == 201, posted.text
        wait_for(lambda: len(hook.on("/orders")) == 1)
        assert hook.on("/orders")[0].json()["body"] == {"n": 1}
    finally:
        assert server.stop() == 0
    assert "Traceback" not in server.log()
