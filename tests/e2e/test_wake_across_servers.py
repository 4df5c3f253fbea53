"""Two ``zq serve`` over one Redis, then one PostgreSQL: the backend wakes the other server.

Each server's re-check is set to an hour, so a claim waiting on one server
can only learn of a message posted through the other from the backend's
notification (Redis pub/sub, PostgreSQL LISTEN/NOTIFY): the claim is
answered with that message long before its wait (and any re-check) ends.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest

from tests.e2e.conftest import selected
from tests.e2e.server import ServerProcess, clean_environment, run_zq
from tests.redis_session import redis_prefix, with_prefix

pytestmark = pytest.mark.slow

WAIT = 15  # seconds each claim may wait: far more than a wake-up takes


@pytest.fixture(scope="module", params=[
    pytest.param(name, marks=pytest.mark.skipif(
        not selected(name), reason=f"{name} not in ZQ_TEST_BACKENDS"))
    for name in ("redis", "postgresql")
])
def two_servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[list[ServerProcess]]:
    tmp = tmp_path_factory.mktemp(f"wake-{request.param}")
    env = clean_environment(tmp / "data")
    env["ZQ_SERVER_WAIT_RECHECK_INTERVAL"] = "3600"
    env["ZQ_NOTIFICATIONS_ENABLED"] = "false"
    with ExitStack() as cleanup:
        if request.param == "redis":
            uri = with_prefix(*cleanup.enter_context(redis_prefix()))
        else:
            uri = request.getfixturevalue("postgres_database")
            migrated = run_zq("db", "upgrade", "--storage", uri, env=env)
            assert migrated.returncode == 0, migrated.stderr
        servers = []
        for n in range(2):
            server = ServerProcess(tmp / f"server-{n}.log", env, "--workers", "1",
                                   "--storage", uri)
            cleanup.callback(server.stop)
            servers.append(server.start())
        yield servers


def headers(project: str) -> dict[str, str]:
    return {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project,
            "Content-Type": "application/json"}


@pytest.mark.parametrize(("waiting_on", "posting_on"), [(0, 1), (1, 0)])
def test_a_post_on_one_server_wakes_a_claim_waiting_on_the_other(two_servers, waiting_on,
                                                                 posting_on):
    project = f"e2e-{uuid.uuid4().hex}"
    answers: list[httpx.Response] = []

    def wait() -> None:
        with httpx.Client(timeout=WAIT + 15, trust_env=False) as http:
            answers.append(http.post(f"{two_servers[waiting_on].url}/v2/queues/jobs/claims",
                                     params={"limit": 1, "wait": WAIT},
                                     headers=headers(project), json={"ttl": 60}))

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(1.0)  # it has found nothing and waits by now
    with httpx.Client(timeout=30, trust_env=False) as http:
        posted = http.post(f"{two_servers[posting_on].url}/v2/queues/jobs/messages",
                           headers=headers(project), json={"messages": [{"body": "hi"}]})
    assert posted.status_code == 201
    sent = time.monotonic()
    waiter.join(WAIT + 20)
    answered_after = time.monotonic() - sent
    (answer,) = answers
    assert answer.status_code == 201, answer.text
    assert [m["body"] for m in answer.json()["messages"]] == ["hi"]
    # Neither its wait nor a re-check ended it: the backend's notification did.
    assert answered_after < WAIT / 2, answered_after
