"""Backend servers that can fail over, started on spare loopback ports.

``postgresql_pair`` starts a PostgreSQL primary and a streaming standby
(``initdb``, ``pg_basebackup -R``); ``redis_sentinel_set`` a Redis master,
one replica and three sentinels. Both live in a temporary directory, listen
on 127.0.0.1 only, on ports the kernel handed out (never the machine's own
5432 or 6379), and each server runs in a process group of its own so that
``kill`` is a SIGKILL of the whole server, as a crash would be.

Whatever was started is stopped when the context exits, also when a test
fails, and once more at interpreter exit (``atexit``) should the context
never get to exit (a KeyboardInterrupt in the middle of a start, say).

PostgreSQL refuses to run as root: as root, the servers run as the
``postgres`` user (or ``nobody``), which owns the temporary directory.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

START_TIMEOUT = 60.0  # seconds; a 2-core machine shared with other test runs
_RUNNING: set[subprocess.Popen] = set()


class Missing(RuntimeError):
    """A server binary the failover tests need is not installed."""


def binary(name: str) -> str:
    """The path of ``name``: on PATH, or in a Debian PostgreSQL's versioned bin/."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                      key=lambda path: int(Path(path).parts[-3]))
    if versions:
        return versions[-1]
    raise Missing(f"{name} is not installed (looked on PATH and in /usr/lib/postgresql/*/bin)")


def sentinel_command() -> list[str]:
    """How to start a Redis sentinel: ``redis-sentinel``, or ``redis-server --sentinel``."""
    with contextlib.suppress(Missing):
        return [binary("redis-sentinel")]
    return [binary("redis-server"), "--sentinel"]


def require(*names: str) -> None:
    """Skip without the binaries; in CI (CI=true) fail instead: CI has them."""
    try:
        for name in names:
            binary(name)
    except Missing as missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing}; CI must install it and never skips the failover tests")
        pytest.skip(str(missing))


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports nobody listens on now (the kernel's choice)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(10)
    _RUNNING.discard(process)


@atexit.register
def _kill_leftovers() -> None:
    for process in list(_RUNNING):
        _kill_group(process)


def _server_user() -> str | None:
    """Who runs PostgreSQL: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise Missing("running as root, and neither a postgres nor a nobody user exists")


@dataclass
class Server:
    """One server process (its own process group), logging to a file."""

    name: str
    argv: list[str]
    log: Path
    user: str | None = None
    process: subprocess.Popen | None = None

    def start(self) -> Server:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, user=self.user,
            )
        _RUNNING.add(self.process)
        return self

    def kill(self) -> None:
        """SIGKILL the server and every process it forked."""
        if self.process is not None:
            _kill_group(self.process)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def _wait(what: str, ready, server: Server | None = None, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ready():
                return
        except Exception:
            pass
        if server is not None and not server.alive():
            raise RuntimeError(f"{what}: the server exited\n{server.output()[-3000:]}")
        if time.monotonic() > deadline:
            tail = server.output()[-3000:] if server is not None else ""
            raise RuntimeError(f"{what}: not ready after {timeout:.0f} s\n{tail}")
        time.sleep(0.1)


@contextlib.contextmanager
def _scratch(prefix: str, user: str | None) -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        if user is not None:
            record = pwd.getpwnam(user)
            os.chmod(directory, 0o755)
            os.chown(directory, record.pw_uid, record.pw_gid)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# --- PostgreSQL ---------------------------------------------------------------


@dataclass
class PostgresPair:
    """A primary and a streaming standby; ``uri`` names both, libpq's way."""

    directory: Path
    user: str | None
    synchronous: bool
    primary_port: int
    standby_port: int
    primary: Server = field(init=False)
    standby: Server = field(init=False)
    database: str = "zq"

    def __post_init__(self) -> None:
        postgres = binary("postgres")
        self.primary = Server("primary", [postgres, "-D", str(self.directory / "primary")],
                              self.directory / "primary.log", self.user)
        self.standby = Server("standby", [postgres, "-D", str(self.directory / "standby")],
                              self.directory / "standby.log", self.user)

    @property
    def uri(self) -> str:
        return (f"postgresql://postgres@127.0.0.1:{self.primary_port},"
                f"127.0.0.1:{self.standby_port}/{self.database}"
                "?target_session_attrs=read-write")

    def single_uri(self, port: int, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{port}/{database}"

    def run(self, *argv: str) -> None:
        subprocess.run(argv, check=True, capture_output=True, user=self.user,
                       stdin=subprocess.DEVNULL, timeout=120)

    def query(self, port: int, sql: str, database: str = "postgres") -> object:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname=database,
                             autocommit=True, connect_timeout=5) as conn:
            cursor = conn.execute(sql)
            row = cursor.fetchone() if cursor.description else None
        return None if row is None else row[0]

    def start(self) -> None:
        primary_dir = self.directory / "primary"
        self.run(binary("initdb"), "-D", str(primary_dir), "-U", "postgres", "--auth=trust",
                 "--no-sync", "-E", "UTF8", "--locale=C")
        settings = [
            "listen_addresses = '127.0.0.1'",
            f"unix_socket_directories = '{self.directory}'",
            f"port = {self.primary_port}",
            "wal_level = replica",
            "max_wal_senders = 5",
            "hot_standby = on",
            "max_connections = 100",
            "shared_buffers = 32MB",
            # A SIGKILL keeps what the kernel has: fsync guards against
            # power loss, which these tests do not simulate.
            "fsync = off",
            "synchronous_commit = on",
            "synchronous_standby_names = '{}'".format("*" if self.synchronous else ""),
        ]
        self._append(primary_dir, settings)
        self.primary.start()
        _wait("PostgreSQL primary", lambda: self.query(self.primary_port, "SELECT 1") == 1,
              self.primary)
        standby_dir = self.directory / "standby"
        self.run(binary("pg_basebackup"), "-h", "127.0.0.1", "-p", str(self.primary_port),
                 "-U", "postgres", "-D", str(standby_dir), "-R", "-X", "stream", "--no-sync")
        # Once promoted the standby has no standby of its own: with the
        # primary's synchronous_standby_names it would wait forever.
        self._append(standby_dir, [f"port = {self.standby_port}",
                                   "synchronous_standby_names = ''"])
        self.standby.start()
        _wait("PostgreSQL standby", lambda: self.query(
            self.standby_port, "SELECT pg_is_in_recovery()") is True, self.standby)
        _wait("streaming replication", lambda: self.query(
            self.primary_port, "SELECT count(*) FROM pg_stat_replication "
            "WHERE state = 'streaming'") == 1)
        self.query(self.primary_port, f"CREATE DATABASE {self.database}")

    def _append(self, data_dir: Path, lines: list[str]) -> None:
        with open(data_dir / "postgresql.conf", "a") as conf:
            conf.write("\n" + "\n".join(lines) + "\n")

    def promote(self) -> None:
        """Promote the standby (by hand, as an operator would) and wait until it takes writes."""
        self.run(binary("pg_ctl"), "promote", "-D", str(self.directory / "standby"), "-w",
                 "-t", "60")
        _wait("promoted standby", lambda: self.query(
            self.standby_port, "SELECT pg_is_in_recovery()") is False, self.standby)

    def stop(self) -> None:
        self.primary.kill()
        self.standby.kill()


@contextlib.contextmanager
def postgresql_pair(*, synchronous: bool) -> Iterator[PostgresPair]:
    """A running primary with a streaming standby (synchronous or not); stopped after."""
    user = _server_user()
    with _scratch("zq-failover-pg-", user) as directory:
        primary_port, standby_port = free_ports(2)
        pair = PostgresPair(directory, user, synchronous, primary_port, standby_port)
        try:
            pair.start()
            yield pair
        finally:
            pair.stop()


# --- Redis -------------------------------------------------------------------


MASTER_NAME = "zqmaster"


@dataclass
class RedisSentinelSet:
    """A master, one replica, three sentinels watching them as ``MASTER_NAME``."""

    directory: Path
    master_port: int
    replica_port: int
    sentinel_ports: list[int]
    master: Server = field(init=False)
    replica: Server = field(init=False)
    sentinels: list[Server] = field(init=False)

    def __post_init__(self) -> None:
        self.master = self._data_server("master", self.master_port)
        self.replica = self._data_server("replica", self.replica_port,
                                         "--replicaof", "127.0.0.1", str(self.master_port))
        self.sentinels = []
        for port in self.sentinel_ports:
            conf = self.directory / f"sentinel-{port}.conf"
            conf.write_text("\n".join([
                f"port {port}",
                "bind 127.0.0.1",
                f"dir {self.directory}",
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {self.master_port} 2",
                f"sentinel down-after-milliseconds {MASTER_NAME} 1000",
                f"sentinel failover-timeout {MASTER_NAME} 10000",
                f"sentinel parallel-syncs {MASTER_NAME} 1",
            ]) + "\n")
            sentinel = sentinel_command()
            self.sentinels.append(Server(f"sentinel-{port}", [sentinel[0], str(conf),
                                                             *sentinel[1:]],
                                         self.directory / f"sentinel-{port}.log"))

    def _data_server(self, name: str, port: int, *extra: str) -> Server:
        return Server(name, [binary("redis-server"), "--port", str(port), "--bind", "127.0.0.1",
                             "--dir", str(self.directory), "--save", "", "--appendonly", "no",
                             "--dbfilename", f"{name}-{port}.rdb", *extra],
                      self.directory / f"{name}-{port}.log")

    @property
    def uri(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{MASTER_NAME}/0"

    def client(self, port: int):
        import redis

        return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5,
                           decode_responses=True)

    def master_address(self) -> tuple[str, int] | None:
        """Where the sentinels say the master is (the first that answers)."""
        for port in self.sentinel_ports:
            with contextlib.suppress(Exception), self.client(port) as sentinel:
                host, master = sentinel.sentinel_get_master_addr_by_name(MASTER_NAME)
                return host, int(master)
        return None

    def start(self) -> None:
        self.master.start()
        _wait("Redis master", lambda: self.client(self.master_port).ping(), self.master)
        self.replica.start()
        _wait("Redis replica", lambda: self.client(self.replica_port).info(
            "replication")["master_link_status"] == "up", self.replica)
        for sentinel, port in zip(self.sentinels, self.sentinel_ports, strict=True):
            sentinel.start()
            _wait("Redis sentinel", lambda port=port: self.client(port).ping(), sentinel)
        # Every sentinel knows the replica and the others before a failover can work.
        def agreed() -> bool:
            for port in self.sentinel_ports:
                state = self.client(port).sentinel_master(MASTER_NAME)
                if state["num-other-sentinels"] != 2 or state["num-slaves"] != 1:
                    return False
            return True

        _wait("sentinels in agreement", agreed)

    def wait_promoted(self, timeout: float = 60.0) -> None:
        """Wait until every sentinel names the replica as master, the failover over.

        Only then may the old master come back: a sentinel still in the
        middle of the failover (or one that has not heard of it) could
        otherwise take the returning, empty server for a master to act on.
        """
        replica = ("127.0.0.1", self.replica_port)

        def done() -> bool:
            for port in self.sentinel_ports:
                with self.client(port) as sentinel:
                    if sentinel.sentinel_get_master_addr_by_name(MASTER_NAME) != replica:
                        return False
                    state = sentinel.sentinel_master(MASTER_NAME)
                    if state.get("is_failover_in_progress") or "failover" in str(
                            state.get("flags", "")):
                        return False
            return self.client(self.replica_port).info("replication")["role"] == "master"

        _wait("Sentinel failover", done, timeout=timeout)

    def rejoin_old_master(self) -> None:
        """Start the killed master again, empty, as a replica of the promoted one.

        What an operator (or a supervisor) does after a failover; only then
        has the new master a replica again, which ``wait_replicas`` needs.
        """
        self.master = self._data_server("old-master", self.master_port,
                                        "--replicaof", "127.0.0.1", str(self.replica_port))
        self.master.start()
        _wait("old master rejoining as a replica", lambda: self.client(self.master_port).info(
            "replication")["master_link_status"] == "up", self.master)

    def stop(self) -> None:
        for server in [*self.sentinels, self.replica, self.master]:
            server.kill()


@contextlib.contextmanager
def redis_sentinel_set() -> Iterator[RedisSentinelSet]:
    """A running master, replica and three sentinels; stopped after."""
    with _scratch("zq-failover-redis-", None) as directory:
        ports = free_ports(5)
        servers = RedisSentinelSet(directory, ports[0], ports[1], ports[2:])
        try:
            servers.start()
            yield servers
        finally:
            servers.stop()
