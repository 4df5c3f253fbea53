"""The installed ``zq serve`` on every backend, driven by python-zaqarclient.

Each server is the virtualenv's console script, started from a directory
outside the checkout: a file missing from the wheel (the Redis Lua scripts,
the migrations) fails here as it would for a user.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from zaqarclient.queues.client import Client

from tests.backends import empty_database
from tests.e2e.server import ServerProcess
from tests.redis_session import redis_prefix, with_prefix

pytestmark = pytest.mark.slow

Serve = Callable[..., ServerProcess]


def dead_letter_round_trip(server: ServerProcess) -> None:
    """Post two messages, claim and release them, see the next claim dead letter both."""
    project = f"installed-{uuid.uuid4().hex[:8]}"
    conf = {"auth_opts": {"backend": "noauth", "options": {"os_project_id": project}}}
    client = Client(server.url, version=2, conf=conf)
    queue = client.queue("orders", force_create=True)
    queue.metadata(new_meta={"_max_claim_count": 1, "_dead_letter_queue": "orders-dlq"})
    queue.post([{"body": {"order": 1}, "ttl": 600}, {"body": {"order": 2}, "ttl": 600}])
    claim = queue.claim(ttl=60, grace=60, limit=10)
    assert sorted(m.body["order"] for m in claim) == [1, 2]
    claim.delete()  # released: free again, each claimed once
    assert list(queue.claim(ttl=60, grace=60, limit=10)) == []  # both moved instead
    assert queue.stats["messages"]["total"] == 0
    dlq = client.queue("orders-dlq", auto_create=False)
    moved = list(dlq.messages(echo=True))
    assert sorted(m.body["order"] for m in moved) == [1, 2]
    assert [m.claim_count for m in moved] == [1, 1]
    for message in moved:
        message.delete()
    assert dlq.stats["messages"]["total"] == 0


def console_served(server: ServerProcess) -> None:
    """The operator console's page and a script of it, from the wheel's static files."""
    page = httpx.get(f"{server.url}/console", timeout=10, trust_env=False)
    assert page.status_code == 200
    assert '<script type="module" src="/console/static/main.js">' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    script = httpx.get(f"{server.url}/console/static/deadletters.js", timeout=10,
                       trust_env=False)
    assert script.status_code == 200 and "export function renderDeadLetters" in script.text


@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mariadb", "redis"])
def test_serve_on_each_backend_with_zaqarclient(
    backend: str, serve: Serve, zq, tmp_path: Path
) -> None:
    with ExitStack() as cleanup:
        if backend == "sqlite":
            uri = f"sqlite:///{tmp_path / 'zq.sqlite3'}"
        elif backend == "redis":
            uri = with_prefix(*cleanup.enter_context(redis_prefix()))
        else:
            uri = cleanup.enter_context(empty_database(backend))
            migrated = zq("db", "upgrade", "--storage", uri)
            assert migrated.returncode == 0, migrated.stderr
            assert "Created the zq schema" in migrated.stdout
        server = serve("--workers", "2", "--storage", uri)
        dead_letter_round_trip(server)
        if backend == "sqlite":
            console_served(server)
        assert server.stop() == 0


def test_serve_pooled_over_sqlite_and_redis_pools(serve: Serve, tmp_path: Path) -> None:
    with ExitStack() as cleanup:
        redis_uri = with_prefix(*cleanup.enter_context(redis_prefix()))
        server = serve("--workers", "2", "--pooling",
                       "--management", f"sqlite:///{tmp_path / 'management.sqlite3'}")
        headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": "admin", "X-Roles": "admin"}
        http = httpx.Client(base_url=f"{server.url}/v2", headers=headers, timeout=30,
                            trust_env=False)
        sqlite_uri = f"sqlite:///{tmp_path / 'pool-a.sqlite3'}"
        for name, uri, weight in (("pool-a", sqlite_uri, 1), ("pool-b", redis_uri, 0)):
            created = http.put(f"/pools/{name}", json={"uri": uri, "weight": weight})
            assert created.status_code == 201, created.text
        dead_letter_round_trip(server)  # weight 0: every queue on pool-a
        # Pool-b takes the new queues once pool-a's weight drops to 0.
        for name, weight in (("pool-a", 0), ("pool-b", 1)):
            patched = http.patch(f"/pools/{name}", json={"weight": weight},
                                 headers={"Content-Type": "application/json"})
            assert patched.status_code == 200, patched.text
        dead_letter_round_trip(server)
        health = http.get("/health")
        assert health.status_code == 200, health.text
        assert "pool-a" in health.text and "pool-b" in health.text
        assert server.stop() == 0


def test_mongomock_with_several_workers_is_refused_and_one_worker_serves(
    serve: Serve, zq
) -> None:
    refused = zq("serve", "--port", "0", "--storage", "mongomock://installed", timeout=60)
    assert refused.returncode == 1
    assert "--workers 1" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    server = serve("--workers", "1", "--storage", "mongomock://installed")
    dead_letter_round_trip(server)
