"""One failover under load, start to audit: shared by the tests and benchmarks/failover.py.

``zq serve`` runs on the backend's failover-aware URI; eight clients load
it; after ``before`` seconds the primary (master) is SIGKILLed with all its
processes; PostgreSQL's standby is promoted by hand ``promote_after``
seconds later (an operator, or Patroni after its own timeout), Redis's
replica by the sentinels; the load goes on until a post is acknowledged
again (at most ``RECOVERY_LIMIT`` seconds after the promotion) and then
for ``after`` seconds; then the clients stop and ``load.audit`` counts.

With ``Timing.lag`` the replica is cut off its primary for the last
``lag`` seconds before the kill (``hold_replication`` in servers.py) and
gets its link back right after it: what the primary acknowledged meanwhile
is what asynchronous replication loses.

After the load a message with a one-second TTL is posted in a project of
its own and the server's gc must record its expiry: the background loops
recover from the failover by themselves, not only the request path.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.crash.audit import crash_environment, project_events
from tests.e2e.server import ServerProcess, clean_environment, run_zq
from tests.failover import servers
from tests.failover.load import (
    SETTLE,
    Client,
    Ledger,
    Report,
    audit,
    configure_queues,
    headers,
)
from zq import events
from zq.storage import open_storage

RECOVERY_LIMIT = 30.0  # seconds from the promotion to the first acknowledged post
GC_INTERVAL = 1.0  # seconds between the server's collections (30 by default)
GC_LIMIT = 20.0  # seconds the gc may take to record the expiry of a one-second message
PRODUCERS = 3
CONSUMERS = 5


@dataclass(frozen=True)
class Timing:
    before: float = 3.0  # seconds of load before the kill
    after: float = 3.0  # seconds of load after the first post acknowledged again
    promote_after: float = 1.0  # PostgreSQL: seconds from the kill to `pg_ctl promote`
    lag: float = 0.0  # seconds before the kill the replica stops receiving (within before)


@dataclass
class Outcome:
    report: Report
    metrics_status: int  # GET /metrics after the failover (the event tail recovered)
    client_failures: list[BaseException]
    server_log: str
    gc_after_failover: float | None  # seconds to the gc's expiry of a probe; None: never


def _gc_probe(url: str, uri: str) -> float | None:
    """Seconds until the gc records the expiry of a one-second message; None: not in time."""
    project = f"gc-probe-{uuid.uuid4().hex[:12]}"
    posted = time.monotonic()
    with httpx.Client(base_url=url, headers=headers(project), timeout=30,
                      trust_env=False) as http:
        response = http.post("/v2/queues/probe/messages",
                             json={"messages": [{"body": "expires", "ttl": 1}]})
        assert response.status_code == 201, response.text
    storage = open_storage(uri)
    try:
        while time.monotonic() < posted + GC_LIMIT:
            if any(e.kind == events.EXPIRED for e in project_events(storage, project)):
                return time.monotonic() - posted
            time.sleep(0.5)
    finally:
        storage.close()
    return None


def _run(tmp: Path, uri: str, backend: str, replication: str, kill: Callable[[], None],
         promote: Callable[[], float | None], timing: Timing, extra_env: dict[str, str],
         hold: Callable[[], None], release: Callable[[], None], *,
         project: str | None = None) -> Outcome:
    """``promote`` returns when the load may go on, and the moment of the promotion
    (time.monotonic()) when that was earlier than its return (None: its return).
    ``hold`` stops the replication ``timing.lag`` seconds before the kill, ``release``
    lets it go on right after the kill."""
    env = {**crash_environment(clean_environment(tmp / "data")),
           "ZQ_LIMITS_MIN_MESSAGE_TTL": "1", "ZQ_GC_INTERVAL": str(GC_INTERVAL), **extra_env}
    if backend == "postgresql":
        upgraded = run_zq("db", "upgrade", "--storage", uri, env=env)
        assert upgraded.returncode == 0, upgraded.stderr
    server = ServerProcess(tmp / f"zq-{backend}.log", env, "--workers", "2",
                           "--storage", uri).start()
    project = project or f"failover-{uuid.uuid4().hex[:12]}"
    ledger, stop = Ledger(), threading.Event()
    clients: list[Client] = []
    try:
        configure_queues(server.url, project)
        clients = [Client(role, server.url, project, ledger, stop, seed) for seed, role in
                   enumerate(["producer"] * PRODUCERS + ["consumer"] * CONSUMERS)]
        for client in clients:
            client.start()
        time.sleep(max(timing.before - timing.lag, 0.0))
        if timing.lag > 0:
            hold()
            time.sleep(timing.lag)
        kill()  # returns once the server and all its processes are gone
        killed = time.monotonic()
        release()
        promoted = promote() or time.monotonic()
        deadline = promoted + RECOVERY_LIMIT
        while time.monotonic() < deadline:
            with ledger.lock:
                if any(sent >= killed for sent in ledger.posts_ok):
                    break
            time.sleep(0.1)
        time.sleep(timing.after)
        stop.set()
        for client in clients:
            client.join(60)
        time.sleep(SETTLE)  # no message delayed by a retry reject's backoff any more
        metrics = httpx.get(f"{server.url}/metrics", timeout=30, trust_env=False).status_code
        report = audit(server.url, uri, project, ledger, backend=backend,
                       replication=replication, killed=killed, promoted=promoted)
        gc_after = _gc_probe(server.url, uri)
    finally:
        stop.set()
        release()
        server.stop()
    return Outcome(report, metrics, [c.failure for c in clients if c.failure is not None],
                   server.log(), gc_after)


def postgresql_failover(tmp: Path, *, synchronous: bool, timing: Timing = Timing()) -> Outcome:
    """A primary SIGKILLed under load, its streaming standby promoted by hand."""
    with servers.postgresql_pair(synchronous=synchronous) as pair:
        def promote() -> float | None:
            time.sleep(timing.promote_after)
            pair.promote()
            return None

        return _run(tmp, pair.uri, "postgresql",
                    "synchronous" if synchronous else "asynchronous",
                    pair.primary.kill, promote, timing, {}, pair.hold_replication,
                    pair.release_replication)


def redis_failover(tmp: Path, *, wait_replicas: int = 0, timing: Timing = Timing()) -> Outcome:
    """A master SIGKILLed under load, its replica promoted by the sentinels.

    With ``wait_replicas`` the killed master is started again once the
    sentinels promoted the replica, empty, as the new master's replica (what
    an operator or a supervisor does): until then no write can be
    acknowledged, since the new master has no replica to confirm it.
    """
    with servers.redis_sentinel_set() as redis_set:
        def promote() -> float:
            redis_set.wait_promoted()
            promoted = time.monotonic()
            if wait_replicas:
                redis_set.rejoin_old_master()
            return promoted

        env = {"ZQ_REDIS_WAIT_REPLICAS": str(wait_replicas)} if wait_replicas else {}
        replication = (f"wait_replicas = {wait_replicas}" if wait_replicas
                       else "asynchronous (wait_replicas = 0)")
        return _run(tmp, redis_set.uri, "redis", replication, redis_set.master.kill, promote,
                    timing, env, redis_set.hold_replication, redis_set.release_replication)


def redis_cluster_failover(tmp: Path, *, timing: Timing = Timing()) -> Outcome:
    """The master serving the project's slot SIGKILLed under load; the cluster
    promotes its replica by itself (after the nodes' timeout and a vote).

    Replication inside the cluster is asynchronous: what the master
    acknowledged in its last moment may be lost, as with Sentinel and
    ``wait_replicas = 0`` (docs/redis.md).
    """
    from redis.crc import key_slot

    from tests.redis_cluster import QUICK_NODE_TIMEOUT_MS, local_cluster
    from zq.storage.redis.cluster import bucket, home_of

    project = f"failover-{uuid.uuid4().hex[:12]}"
    slot = key_slot(home_of("zqfail:", bucket(project)).encode())
    with local_cluster(QUICK_NODE_TIMEOUT_MS) as cluster:
        client = cluster.cluster_client()
        try:
            master = client.nodes_manager.get_node_from_slot(slot).port
        finally:
            client.close()

        master_id = cluster.node_id(master)
        replica = next(port for port in cluster.ports
                       if port != master and cluster.client(port).execute_command(
                           "ROLE")[0] == "slave"
                       and cluster.client(port).execute_command("CLUSTER", "MYID") in
                       _replicas_of(cluster, master, master_id))

        def promote() -> float | None:
            deadline = time.monotonic() + RECOVERY_LIMIT
            while cluster.client(replica).execute_command("ROLE")[0] != "master":
                if time.monotonic() > deadline:
                    raise RuntimeError("the cluster promoted no replica in time")
                time.sleep(0.05)
            return time.monotonic()

        uri = f"{cluster.uri}?prefix=zqfail"
        return _run(tmp, uri, "redis-cluster", "asynchronous (cluster replica)",
                    lambda: cluster.kill(master), promote, timing, {}, lambda: None,
                    lambda: None, project=project)


def _replicas_of(cluster: object, port: int, node_id: str) -> set[str]:
    """The node ids of the replicas of the master ``node_id`` (on ``port``)."""
    lines = cluster.client(port).execute_command("CLUSTER", "REPLICAS", node_id)  # type: ignore[attr-defined]
    return {line.split()[0] for line in lines}
