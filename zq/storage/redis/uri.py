"""Reading a Redis storage URI: ``redis://``, ``rediss://``, ``redis+sentinel://``
or ``redis+cluster://``.

``redis+sentinel://[[user]:password@]h1:26379,h2:26380/MASTER[/db][?options]``
names Redis Sentinel's addresses and the master's name; the client asks
the sentinels where the master is, and asks again after it lost its
connection or was answered READONLY by a replica, so it follows a
failover. The user and password authenticate to the master (the sentinels
are asked without); the options are those of ``redis://`` and apply to the
master's connections.

``redis+cluster://[[user]:password@]h1:7000,h2:7001[/][?options]`` names any
reachable nodes of a Redis Cluster (the client learns the others from
them); the options are those of ``redis://`` and apply to every node's
connections; a cluster has only database 0 (zq/storage/redis/cluster.py).
``RedisTarget.client`` makes the redis-py client for every form: the one
place that does.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
from redis.cluster import ClusterNode
from redis.connection import URL_QUERY_ARGUMENT_PARSERS, SSLConnection, parse_url
from redis.sentinel import Sentinel

from zq.errors import InvalidRequest

DEFAULT_PREFIX = "zq"
SENTINEL_SCHEME = "redis+sentinel"
SENTINEL_PORT = 26379
CLUSTER_SCHEME = "redis+cluster"
CLUSTER_PORT = 6379
# Seconds a sentinel may take to answer "where is the master" (unless the
# URI's socket_timeout / socket_connect_timeout say otherwise): a sentinel
# that hangs must not hold a request past its bound.
SENTINEL_TIMEOUT = 2.0

# No ':' in a prefix: the first ':' of every key ends it, so two prefixes
# can never produce the same key.
_PREFIX = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class RedisTarget:
    url: str  # what redis-py's from_url receives (zq's own options removed)
    prefix: str  # key prefix, ending in ':'
    sentinels: tuple[tuple[str, int], ...] = ()  # redis+sentinel: where to ask
    master: str = ""  # redis+sentinel: the name the sentinels know the master by
    nodes: tuple[tuple[str, int], ...] = ()  # redis+cluster: where to learn the cluster

    @property
    def cluster(self) -> bool:
        """Whether this is a Redis Cluster (``redis+cluster://``)."""
        return bool(self.nodes)

    def client(self, **options: Any) -> redis.Redis:
        """A client of the master: ``options`` are redis-py's, added to the URI's."""
        if self.nodes:
            settings = {key: value for key, value in parse_url(self.url).items()
                        if key not in ("host", "port", "db")}
            return redis.RedisCluster(  # type: ignore[return-value]
                startup_nodes=[ClusterNode(host, port) for host, port in self.nodes],
                **{**settings, **options})
        if not self.sentinels:
            return redis.Redis.from_url(self.url, **options)
        settings = {key: value for key, value in parse_url(self.url).items()
                    if key not in ("host", "port")}
        asking = {key: settings.get(key, SENTINEL_TIMEOUT)
                  for key in ("socket_timeout", "socket_connect_timeout")}
        sentinel = Sentinel(list(self.sentinels), sentinel_kwargs=asking)
        return sentinel.master_for(self.master, **{**settings, **options})


def parse_uri(uri: str) -> RedisTarget:
    """Split zq's ``?prefix=NAME`` option off a Redis URI and check it."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in ("redis", "rediss", SENTINEL_SCHEME, CLUSTER_SCHEME):
        if scheme.endswith("+sentinel"):
            raise InvalidRequest(
                f"{scheme!r} is not supported: Redis Sentinel is {SENTINEL_SCHEME}:// "
                "(TLS through Sentinel is not)."
            )
        raise InvalidRequest(f"Not a Redis URI: {uri!r}.")
    query = parse_qsl(parts.query, keep_blank_values=True)
    known = known_options(scheme)
    unknown = sorted({key for key, _ in query} - known)
    if unknown:
        # redis-py would pass it on as a keyword and fail with a TypeError
        # at the first command.
        raise InvalidRequest(
            f"Redis URI option {unknown[0]!r} is unknown; known: {', '.join(sorted(known))}."
        )
    prefixes = [value for key, value in query if key == "prefix"]
    prefix = prefixes[-1] if prefixes else DEFAULT_PREFIX
    if not _PREFIX.fullmatch(prefix):
        raise InvalidRequest(
            f"Redis key prefix {prefix!r} must be 1-64 letters, digits, '_', '.' or '-'."
        )
    rest = urlencode([(key, value) for key, value in query if key != "prefix"])
    if scheme == SENTINEL_SCHEME:
        return _sentinel_target(uri, parts.netloc, parts.path, rest, prefix + ":")
    if scheme == CLUSTER_SCHEME:
        return _cluster_target(uri, parts.netloc, parts.path, rest, prefix + ":")
    return RedisTarget(url=urlunsplit(parts._replace(query=rest)), prefix=prefix + ":")


def _sentinel_target(uri: str, netloc: str, path: str, query: str, prefix: str) -> RedisTarget:
    userinfo, at, hosts = netloc.rpartition("@")
    names = [part for part in path.split("/") if part]
    if not hosts or len(names) not in (1, 2) or (len(names) == 2 and not names[1].isdigit()):
        raise InvalidRequest(
            f"A Redis Sentinel URI is {SENTINEL_SCHEME}://host:port[,host:port...]/MASTER[/db]"
            f"[?options]; {_shown(uri)} is not."
        )
    sentinels = tuple(_address(entry, uri) for entry in hosts.split(","))
    database = names[1] if len(names) == 2 else "0"
    # The master's own connection settings, as redis-py reads them from a
    # redis:// URL; its host and port come from the sentinels.
    url = urlunsplit(("redis", f"{userinfo}{at}sentinel-master", f"/{database}", query, ""))
    return RedisTarget(url=url, prefix=prefix, sentinels=sentinels, master=names[0])


def _cluster_target(uri: str, netloc: str, path: str, query: str, prefix: str) -> RedisTarget:
    userinfo, at, hosts = netloc.rpartition("@")
    if not hosts or path.strip("/") not in ("", "0"):
        raise InvalidRequest(
            f"A Redis Cluster URI is {CLUSTER_SCHEME}://host:port[,host:port...][/][?options] "
            f"(a cluster has only database 0); {_shown(uri)} is not."
        )
    nodes = tuple(_address(entry, uri, CLUSTER_PORT) for entry in hosts.split(","))
    url = urlunsplit(("redis", f"{userinfo}{at}cluster-node", "/0", query, ""))
    return RedisTarget(url=url, prefix=prefix, nodes=nodes)


def _address(entry: str, uri: str, default_port: int = SENTINEL_PORT) -> tuple[str, int]:
    host, port = entry, ""
    if entry.startswith("["):  # [IPv6]:port
        host, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
    elif ":" in entry:
        host, _, port = entry.rpartition(":")
    if not host or (port and not port.isdigit()) or (port and not 0 < int(port) < 65536):
        raise InvalidRequest(
            f"Redis address {entry!r} in {_shown(uri)} must be host or host:port."
        )
    return host, int(port) if port else default_port


def _shown(uri: str) -> str:
    from zq.storage.uri import redact

    return repr(redact(uri))


def known_options(scheme: str) -> set[str]:
    """The ``?name=`` options a Redis URI may carry: zq's and redis-py's."""
    known = {"prefix", "client_name", *URL_QUERY_ARGUMENT_PARSERS}
    if scheme == "rediss":
        known |= {name for name in inspect.signature(SSLConnection.__init__).parameters
                  if name.startswith("ssl_")}
    return known
