"""Redis Cluster: each project's keys under one hash tag, its scripts in one slot.

A cluster runs a script on the node serving the slot of its keys, and
every key the script touches must be in that slot. The layout stays the
single server's (zq/storage/redis/__init__.py) but is repeated per *home*:
a key prefix ``P{b}:`` whose hash tag ``{b}`` is a bucket, ``b`` =
CRC16(enc(project)) mod ``BUCKETS``. Every key a script computes starts
with its home, so one script call -- a claim's dead letter moves into any
queue of the project, the project's links version, its events -- stays in
one slot. Many projects share a bucket; a project never spans two.

Why buckets rather than one tag per project: what reads across projects
(gc, the health report's message volume, the breakers' due redrives,
subscriptions' expiry, the event log's drain) walks every home, and a
fixed number of buckets bounds that walk however many projects there are.
1024 buckets spread over up to a few hundred masters.

Slot migration. Every call declares two keys of its home: one that never
exists (``P{b}:-``) and the home's ``layout`` key. While the slot is being
migrated (``redis-cli --cluster reshard``) Redis answers such a call
TRYAGAIN, or ASK and then TRYAGAIN on the importing node, because it
cannot hold all the keys it declares: the script is refused before it
starts, never run with half its keys moved. Outside a migration every key
of the home is on the serving node. MOVED, ASK and TRYAGAIN mean "not
run", so they are retried (redis-py follows MOVED and ASK; zq retries what
is left, with backoff, for ``REDIRECT_PATIENCE`` seconds, then answers
503). A lost connection is never retried (the script may have run).

The homes in use are listed in the set ``P homes`` (its own slot), added
to before a home's first write by each process, so a walk over the homes
never misses data; a process that finds one of its homes missing from the
set (lost in a failover of the set's master) adds it again.
"""

from __future__ import annotations

import binascii
import contextlib
import time
from typing import Any

import redis
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MovedError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)

from zq.errors import BACKEND_UNREACHABLE, StorageUnavailable
from zq.storage.redis.scripts import ScriptBook
from zq.storage.redis.sending import ReplicaWait

BUCKETS = 1024

# Scripts that read or write across projects: run in each home by run_in.
BACKEND_WIDE = frozenset({
    "gc", "message_volume", "breaker_due", "sub_gc", "claimable_at", "events_read",
    "events_count", "events_end", "events_trim", "events_absorb", "layout_upgrade",
})

# Seconds a call keeps retrying while its slot migrates or the cluster
# elects a new master, before the client gets 503 (a reshard moves a slot
# in well under this; a failover takes cluster-node-timeout and a vote).
REDIRECT_PATIENCE = 10.0

# Errors that mean the script did not run (a redirection, a migrating
# slot, no master for the slot yet): retrying cannot run it twice.
NOT_RUN = (TryAgainError, AskError, MovedError, ClusterDownError, SlotNotCoveredError)


def enc(text: str) -> str:
    """``len .. ':' .. text`` in bytes, as lua/_lib.lua's ``enc``."""
    return f"{len(text.encode())}:{text}"


def bucket(project: str) -> int:
    """The bucket of ``project``: which home holds its keys."""
    return binascii.crc_hqx(enc(project).encode(), 0) % BUCKETS


def home_of(prefix: str, number: int | str) -> str:
    """The key prefix of bucket ``number``: ``prefix{number}:``."""
    return f"{prefix}{{{number}}}:"


def events_home(prefix: str) -> str:
    """Where the drained event log and the notification cursors live."""
    return f"{prefix}{{events}}:"


class ClusterScriptBook(ScriptBook):
    """The scripts on a Redis Cluster: each call in its project's home."""

    def __init__(self, client: redis.RedisCluster, prefix: str,
                 wait: ReplicaWait | None = None) -> None:
        super().__init__(client, prefix, wait)
        self._registry = prefix + "homes"
        self._registered: set[int] = set()
        self._homes_by_prefix = {home_of(prefix, n): n for n in range(BUCKETS)}

    def home(self, project: str) -> str:
        return home_of(self._prefix, bucket(project))

    def homes(self) -> list[str]:
        try:
            found = {int(n) for n in self._client.smembers(self._registry)}
            # The set's master failed over before it had our addition (its
            # replication is asynchronous): add again what this process wrote.
            lost = self._registered - found
            if lost:
                self._client.sadd(self._registry, *lost)
        except redis.RedisError as exc:
            raise StorageUnavailable(BACKEND_UNREACHABLE, detail=f"Redis: {exc}") from exc
        return [home_of(self._prefix, n) for n in sorted(found | lost)]

    def run(self, name: str, now: float, *args: Any) -> Any:
        if name in BACKEND_WIDE:
            raise RuntimeError(f"script {name} reads across projects: call run_in per home")
        return self.run_in(self.home(str(args[0])), name, now, *args)

    def run_in(self, home: str, name: str, now: float, *args: Any) -> Any:
        number = self._homes_by_prefix.get(home)
        if number is not None and number not in self._registered and name in self._writes:
            self._register(number)
        deadline = time.monotonic() + REDIRECT_PATIENCE
        pause = 0.02
        while True:
            try:
                return super().run_in(home, name, now, *args)
            except StorageUnavailable as exc:
                if not _not_run(exc.__cause__) or time.monotonic() >= deadline:
                    raise
            except SlotNotCoveredError as exc:
                # Not a RedisError: no master serves the slot (yet).
                if time.monotonic() >= deadline:
                    raise StorageUnavailable(BACKEND_UNREACHABLE,
                                             detail=f"Redis Cluster: {exc}") from exc
            time.sleep(pause)
            pause = min(pause * 2, 0.5)

    def run_everywhere(self, name: str, now: float, *args: Any) -> list[tuple[str, Any]]:
        homes = self.homes()
        if len(homes) < 2 or (self._wait is not None and name in self._writes):
            return super().run_everywhere(name, now, *args)
        # One round trip per master instead of one per home. Only for
        # scripts that may run again harmlessly (gc, reads): a call that
        # failed in the pipeline is made again alone, with run_in's rules.
        pipe = self._client.pipeline(transaction=False)
        for home in homes:
            pipe.execute_command("EVALSHA", self._shas[name], *self._routing(home), home,
                                 repr(float(now)), *args)
        try:
            answers = pipe.execute(raise_on_error=False)
        except (redis.RedisError, RedisClusterException):
            return super().run_everywhere(name, now, *args)
        return [(home, self.run_in(home, name, now, *args)
                 if isinstance(answer, Exception) else answer)
                for home, answer in zip(homes, answers, strict=True)]

    def _call(self, name: str, command: tuple[Any, ...]) -> Any:
        wait = self._wait
        if wait is None or name not in self._writes:
            return self._client.execute_command(*command)
        # WAIT counts the replicas that have this connection's writes: the
        # script and WAIT go down one connection to the slot's master,
        # bypassing the cluster client's routing (a keyless WAIT would go
        # to any node).
        cluster: redis.RedisCluster = self._client  # type: ignore[assignment]
        node = cluster.get_node_from_key(command[3])
        pipe = cluster.get_redis_connection(node).pipeline(transaction=False)
        pipe.execute_command(*command)
        pipe.execute_command("WAIT", wait.replicas, wait.timeout_ms)
        try:
            answer, confirmed = pipe.execute()
        except (redis.ConnectionError, redis.TimeoutError, MovedError, AskError):
            # The slot moved or its master is gone: learn the cluster's map
            # again so that the next call goes where the slot is now.
            with contextlib.suppress(redis.RedisError, RedisClusterException):
                cluster.nodes_manager.initialize()
            raise
        return self._confirmed(name, answer, confirmed, wait)

    def _routing(self, home: str) -> tuple[Any, ...]:
        # Two keys of the home, one never written: refused while migrating
        # (module documentation).
        return (2, home + "-", home + "layout")

    def _register(self, number: int) -> None:
        try:
            self._client.sadd(self._registry, number)
        except redis.RedisError as exc:
            raise StorageUnavailable(BACKEND_UNREACHABLE, detail=f"Redis: {exc}") from exc
        self._registered.add(number)


def _not_run(error: BaseException | None) -> bool:
    """Whether ``error`` says the script was refused before it ran."""
    if isinstance(error, NOT_RUN):
        return True
    # redis-py gives up following redirections with "TTL exhausted".
    return isinstance(error, ClusterError) and "TTL exhausted" in str(error)
