"""A real local Redis Cluster for tests: 6 nodes, 3 masters with a replica each.

``local_cluster()`` starts six ``redis-server --cluster-enabled yes`` on
spare loopback ports (each with its cluster bus port, +10000, spare too) in
a temporary directory, joins them with ``redis-cli --cluster create
--cluster-replicas 1``, waits until every node says the cluster is ok, and
stops every process it started when the context ends, on failure too. It
never touches the machine's Redis on 6379. ``redis-server`` and
``redis-cli`` must be on PATH (or ZQ_TEST_REDIS_SERVER / ZQ_TEST_REDIS_CLI).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.backends import BackendUnreachable
from zq.clock import Clock
from zq.storage.base import Storage

NODES = 6
# A master is failed over after this many ms without an answer. Redis's
# default: a busy test machine can stall a node (or one long script, a post
# of the most messages allowed) for seconds, which must not fail it over.
NODE_TIMEOUT_MS = 15000
# For the failover test and benchmark: a failover in seconds.
QUICK_NODE_TIMEOUT_MS = 1500
START_TIMEOUT = 30.0


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def spare_ports(count: int) -> list[int]:
    """``count`` ports whose cluster bus ports (+10000) are free too, never 6379."""
    found: list[int] = []
    candidate = 21000 + (os.getpid() * 7) % 8000
    while len(found) < count:
        candidate += 1
        if candidate > 29999:
            candidate = 21000
        if candidate != 6379 and _free(candidate) and _free(candidate + 10000):
            found.append(candidate)
    return found


@dataclass
class LocalCluster:
    """The running cluster: its ports and processes (by port)."""

    directory: Path
    ports: list[int]
    node_timeout_ms: int = NODE_TIMEOUT_MS
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def uri(self) -> str:
        """``redis+cluster://`` naming two of the nodes (any reachable node will do)."""
        return f"redis+cluster://127.0.0.1:{self.ports[0]},127.0.0.1:{self.ports[1]}/"

    def client(self, port: int) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=port, decode_responses=True,
                           socket_timeout=5)

    def cluster_client(self) -> redis.RedisCluster:
        return redis.RedisCluster(host="127.0.0.1", port=self.ports[0], decode_responses=True)

    def start(self, port: int) -> None:
        """Start (or restart) the node on ``port`` with its saved cluster config."""
        self.processes[port] = subprocess.Popen(
            [_tool("ZQ_TEST_REDIS_SERVER", "redis-server"),
             "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
             "--cluster-config-file", f"nodes-{port}.conf",
             "--cluster-node-timeout", str(self.node_timeout_ms),
             "--appendonly", "no", "--save", "", "--dir", str(self.directory),
             "--logfile", f"redis-{port}.log", "--protected-mode", "no"],
            cwd=self.directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self, port: int) -> None:
        """SIGKILL the node on ``port`` (a crash: no goodbye to the cluster)."""
        process = self.processes.pop(port)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self.processes.clear()

    def masters(self) -> list[int]:
        """Ports of the live nodes that are masters serving slots."""
        found = []
        for port in self.processes:
            try:
                info = self.client(port).execute_command("ROLE")
            except redis.RedisError:
                continue
            if info[0] == "master":
                found.append(port)
        return sorted(found)

    def node_id(self, port: int) -> str:
        return str(self.client(port).execute_command("CLUSTER", "MYID"))

    def wait_ok(self, timeout: float = START_TIMEOUT) -> None:
        """Until every live node says cluster_state:ok and sees every slot served."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if all(self._ok(port) for port in self.processes):
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise BackendUnreachable("the local Redis Cluster did not become ok in time")
            time.sleep(0.1)

    def wait_replicated(self, timeout: float = START_TIMEOUT) -> None:
        """Until each of the three masters has a replica whose link to it is up."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                linked = [port for port in self.processes
                          if self.client(port).info("replication").get("master_link_status")
                          == "up"]
                if len(linked) == NODES // 2 and len(self.masters()) == NODES // 2:
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise BackendUnreachable("the local Redis Cluster's replicas did not link up")
            time.sleep(0.1)

    def _ok(self, port: int) -> bool:
        info = self.client(port).execute_command("CLUSTER", "INFO")
        return "cluster_state:ok" in info and "cluster_slots_ok:16384" in info

    def wait_agreed(self, timeout: float = START_TIMEOUT) -> None:
        """Until ``redis-cli --cluster check`` finds nothing to fix (after a reshard
        or a failover the nodes agree on the slots a moment later)."""
        deadline = time.monotonic() + timeout
        port = self.masters()[0]
        while True:
            try:
                checked = self.redis_cli("--cluster", "check", f"127.0.0.1:{port}")
                if "[ERR]" not in checked and "[WARNING]" not in checked:
                    return
            except RuntimeError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the local Redis Cluster's nodes did not agree in time")
            time.sleep(0.1)

    def redis_cli(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run([_tool("ZQ_TEST_REDIS_CLI", "redis-cli"), *args],
                              capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"redis-cli {' '.join(args)} failed: {done.stdout}{done.stderr}")
        return done.stdout


def _tool(variable: str, name: str) -> str:
    found = os.environ.get(variable) or shutil.which(name)
    if not found:
        raise BackendUnreachable(
            f"{name} is not on PATH: the redis-cluster tests start a local cluster with it "
            f"(set {variable}, or leave redis-cluster out of ZQ_TEST_BACKENDS).")
    return found


def _answering(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            redis.Redis(host="127.0.0.1", port=port, socket_timeout=1).ping()
            return
        except redis.RedisError:
            if time.monotonic() > deadline:
                raise BackendUnreachable(f"redis-server on port {port} did not start") from None
            time.sleep(0.05)


@contextmanager
def cluster_session() -> Iterator[Callable[[Clock], Storage]]:
    """The tests/backends.py session setup: a fresh cluster, a random key prefix."""
    from zq.storage.redis import open_redis

    with local_cluster() as cluster:
        uri = f"{cluster.uri}?prefix=zqtest-{secrets.token_hex(6)}"
        yield lambda clock: open_redis(uri, clock=clock)


@contextmanager
def local_cluster(node_timeout_ms: int = NODE_TIMEOUT_MS) -> Iterator[LocalCluster]:
    """Start the cluster (module documentation); always stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="zq-redis-cluster-") as directory:
        cluster = LocalCluster(Path(directory), spare_ports(NODES), node_timeout_ms)
        try:
            for port in cluster.ports:
                cluster.start(port)
            for port in cluster.ports:
                _answering(port, START_TIMEOUT)
            cluster.redis_cli("--cluster", "create",
                              *(f"127.0.0.1:{port}" for port in cluster.ports),
                              "--cluster-replicas", "1", "--cluster-yes")
            cluster.wait_ok()
            cluster.wait_replicated()
            yield cluster
        finally:
            cluster.stop()
