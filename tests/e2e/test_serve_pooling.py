"""``zq serve --pooling`` as an admin runs it: pools over HTTP, queues on both.

Two SQLite pools are registered through the admin API of a real server
process; weights steer each new queue to one pool (weight 0 takes no new
queues), so where every queue lands is known and checked in the pool's own
database. Then ``zq gc`` and ``zq events export`` go over both pools.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import START_LINE, ServerProcess, clean_environment, run_zq
from zq.clock import SystemClock
from zq.storage import open_storage

pytestmark = pytest.mark.slow

PROJECT = f"e2e-pools-{uuid.uuid4().hex[:8]}"
PATCH = "application/openstack-messaging-v2.0-json-patch"
HEADERS = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": PROJECT, "X-Roles": "admin"}


@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    """A ``zq serve --pooling`` on the default management store, and its directory."""
    tmp = tmp_path_factory.mktemp("e2e-pooling")
    server = ServerProcess(tmp / "server.log", clean_environment(tmp / "data"),
                           "--workers", "2", "--pooling")
    try:
        yield server.start(), tmp
    finally:
        server.stop()


def queues_in(uri: str) -> set[str]:
    """The queues of the test's project in one pool's own database."""
    storage = open_storage(uri, clock=SystemClock())
    try:
        return {q.name for q in storage.queues.list(PROJECT, marker=None, limit=100, name=None)}
    finally:
        storage.close()


def test_pools_queues_dead_letters_gc_and_export(
    pooled: tuple[ServerProcess, Path],
) -> None:
    server, tmp = pooled
    management = tmp / "data" / "zq" / "zq-management.sqlite3"
    match = START_LINE.search(server.log())
    assert match is not None and match.group(2) == f"sqlite:///{management}"
    assert management.is_file()  # created and migrated by the master
    http = httpx.Client(base_url=f"{server.url}/v2", headers=HEADERS, timeout=10,
                        trust_env=False)
    uris = {name: f"sqlite:///{tmp / name}.sqlite3" for name in ("pool-a", "pool-b")}

    # Register both pools; only pool-a takes new queues for now.
    for name, weight in (("pool-a", 100), ("pool-b", 0)):
        put = http.put(f"/pools/{name}", json={"uri": uris[name], "weight": weight})
        assert put.status_code == 201, put.text
    assert [p["name"] for p in http.get("/pools").json()["pools"]] == ["pool-a", "pool-b"]
    assert http.get("/pools", headers={"X-Roles": ""}).status_code == 403

    assert http.put("/queues/jobs").status_code == 201
    # Now every new queue goes to pool-b, except a dead letter queue of a pool-a source.
    for name, weight in (("pool-a", 0), ("pool-b", 100)):
        assert http.patch(f"/pools/{name}", json={"weight": weight}).status_code == 200
    assert http.put("/queues/clicks").status_code == 201
    patched = http.patch(
        "/queues/jobs", headers={"Content-Type": PATCH},
        json=[{"op": "add", "path": "/metadata/_max_claim_count", "value": 1},
              {"op": "add", "path": "/metadata/_dead_letter_queue", "value": "jobs-dlq"}],
    )
    assert patched.status_code == 200, patched.text
    assert queues_in(uris["pool-a"]) == {"jobs", "jobs-dlq"}  # weight 0, yet beside jobs
    assert queues_in(uris["pool-b"]) == {"clicks"}

    # Post and claim on each pool.
    for queue in ("jobs", "clicks"):
        posted = http.post(f"/queues/{queue}/messages",
                           json={"messages": [{"body": {"on": queue}, "ttl": 600}]})
        assert posted.status_code == 201, posted.text
        claimed = http.post(f"/queues/{queue}/claims", json={"ttl": 60, "grace": 60})
        assert claimed.status_code == 201, claimed.text
        assert [m["body"] for m in claimed.json()["messages"]] == [{"on": queue}]
        # Release: the message is free again (and, on jobs, spent its one claim).
        assert http.delete(server.url + claimed.headers["location"]).status_code == 204

    # The exhausted message moves to jobs-dlq, inside pool-a's database.
    assert http.post("/queues/jobs/claims", json={"ttl": 60, "grace": 60}).status_code == 204
    moved = http.get("/queues/jobs-dlq/messages", params={"echo": "true"}).json()
    assert [(m["body"], m["claim_count"]) for m in moved["messages"]] == [({"on": "jobs"}, 1)]

    # A queue on pool-b cannot dead letter into a queue of pool-a.
    refused = http.patch(
        "/queues/clicks",
        headers={"Content-Type": PATCH},
        json=[{"op": "add", "path": "/metadata/_dead_letter_queue", "value": "jobs-dlq"}],
    )
    assert refused.status_code == 409
    assert "'pool-a'" in refused.json()["description"]
    assert "'pool-b'" in refused.json()["description"]

    health = http.get("/health").json()
    assert set(health) == {"pool-a", "pool-b", "notifier"}
    assert health.pop("notifier")["state"] == "running"
    assert all(pool["storage_reachable"] for pool in health.values())

    # The maintenance commands find the pools in the same management store.
    collected = run_zq("gc", "--pooling", env=server.env)
    assert collected.returncode == 0, collected.stderr
    assert collected.stdout.splitlines() == [
        f"Removed 0 expired message(s) and 0 expired claim(s) from pool '{name}' ({uris[name]})."
        for name in ("pool-a", "pool-b")
    ]
    # SQLite pools need no settle window: events of seconds ago are exported.
    exported = run_zq("events", "export", "--to", str(tmp / "events"), "--pooling",
                      env=server.env)
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["pool 'pool-a'", "pool 'pool-b'"]
    assert all(" 0 events exported" not in line for line in lines)
    http.close()
    assert "Traceback" not in server.log()
