"""The Redis backend: one client, the scripts, the controllers."""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from zq.clock import Clock
from zq.config import RedisConfig
from zq.errors import StorageUnavailable
from zq.storage.base import Storage
from zq.storage.records import Collected
from zq.storage.redis.breakers import RedisBreakers
from zq.storage.redis.claims import RedisClaims
from zq.storage.redis.cluster import ClusterScriptBook, events_home
from zq.storage.redis.cluster_events import ClusterEventLog
from zq.storage.redis.coalesce import Coalescer
from zq.storage.redis.consumers import RedisConsumers
from zq.storage.redis.cursors import RedisNotificationCursors
from zq.storage.redis.events import RedisEventLog
from zq.storage.redis.layout import check_layout
from zq.storage.redis.messages import RedisMessages
from zq.storage.redis.queues import RedisQueues
from zq.storage.redis.scripts import ScriptBook
from zq.storage.redis.sending import ReplicaWait
from zq.storage.redis.subscriptions import RedisSubscriptions
from zq.storage.redis.uri import parse_uri
from zq.storage.redis.wakeups import RedisWakeups
from zq.storage.redis.wire import Budget
from zq.storage.uri import redact

# Expired messages and claims removed per gc script run; small enough that
# one run never blocks the server noticeably.
GC_BATCH = 500


class RedisStorage(Storage):
    # Every post, claim and pop script compares the queue's metadata version.
    checks_metadata_version = True
    # The breaker and the blame split, in the scripts they belong to (lua/_breaker.lua).
    has_breaker = True

    def __init__(
        self, client: redis.Redis, prefix: str, clock: Clock, budget: Budget | None = None,
        wait: ReplicaWait | None = None, *, cluster: bool = False,
        coalescer: Coalescer | None = None,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self._clock = clock
        if cluster and coalescer is not None:
            raise ValueError("coalesced script calls are not available on a Redis Cluster")
        self._scripts = (ClusterScriptBook(client, prefix, wait) if cluster  # type: ignore[arg-type]
                         else ScriptBook(client, prefix, wait, coalescer))
        budget = budget or Budget()
        self.queues = RedisQueues(self._scripts, clock, budget)
        self.messages = RedisMessages(self._scripts, clock, budget)
        self.claims = RedisClaims(self._scripts, clock, budget)
        self.events = (ClusterEventLog(self._scripts, clock, budget, client=client, prefix=prefix)
                       if cluster else RedisEventLog(self._scripts, clock, budget))
        self.consumers = RedisConsumers(self._scripts, clock, budget)
        self.breakers = RedisBreakers(self._scripts, clock, budget)
        self.wakeups = RedisWakeups(self._scripts, clock, budget, client=client, prefix=prefix)
        # On a cluster every cursor and the cursors' index share one slot
        # (the cursor scripts touch both).
        self.notification_cursors = RedisNotificationCursors(
            client, events_home(prefix) if cluster else prefix, clock)
        self.subscriptions = RedisSubscriptions(self._scripts, clock, budget,
                                                client=client, prefix=prefix)

    def ping(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.RedisError:
            return False

    def gc(self) -> Collected:
        collected = Collected()
        # Every home at once (one round trip per node on a cluster), then the
        # homes with more to collect one by one.
        for home, answer in self._scripts.run_everywhere("gc", self._clock.now(), GC_BATCH):
            while True:
                # gc.lua removes every expired claim it looks at.
                gone, claims_seen, more, moved = answer
                collected += Collected(int(gone), int(claims_seen), int(moved))
                if claims_seen < GC_BATCH and not more:
                    break
                answer = self._scripts.run_in(home, "gc", self._clock.now(), GC_BATCH)
        return collected + Collected(subscriptions=self.subscriptions.collect())

    def close(self) -> None:
        self.client.close()


def open_redis(uri: str, *, clock: Clock, settings: RedisConfig | None = None) -> Storage:
    """Connect to ``redis://[:password@]host:port/db[?prefix=NAME]`` (rediss://,
    redis+sentinel://, redis+cluster://)."""
    target = parse_uri(uri)
    settings = settings or RedisConfig()
    if settings.coalesce and target.cluster:
        # The cluster client routes each call to its slot's master; batching
        # per node is not done (docs/redis.md, "Coalesced script calls"):
        # said here rather than ignored.
        raise StorageUnavailable(
            f"Cannot use the Redis storage {redact(uri)}: [redis] coalesce "
            "(ZQ_REDIS_COALESCE) is not available on a Redis Cluster; turn it off.")
    # No automatic retries: after a lost reply nobody knows whether a script
    # ran, and running a claim or pop twice would not be harmless.
    where = f"{redact(uri)} (prefix {target.prefix[:-1]!r})"
    try:
        # A cluster client asks its nodes for the slots map right away.
        client = target.client(decode_responses=True, retry=Retry(NoBackoff(), 0))
    except (redis.RedisError, RedisClusterException) as exc:
        raise StorageUnavailable(f"Cannot use the Redis storage {where}: {exc}") from exc
    try:
        check_layout(client, target.prefix, where, uri)
    except (redis.RedisError, RedisClusterException) as exc:
        client.close()
        raise StorageUnavailable(f"Cannot use the Redis storage {where}: {exc}") from exc
    except BaseException:
        client.close()
        raise
    wait = (ReplicaWait(settings.wait_replicas, settings.wait_timeout_ms)
            if settings.wait_replicas else None)
    coalescer = (Coalescer(client, window=settings.coalesce_window, wait=wait)
                 if settings.coalesce else None)
    return RedisStorage(client, target.prefix, clock, wait=wait, cluster=target.cluster,
                        coalescer=coalescer)
