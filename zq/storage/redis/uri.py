"""Reading a ``redis://`` / ``rediss://`` storage URI."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from redis.connection import URL_QUERY_ARGUMENT_PARSERS, SSLConnection

from zq.errors import InvalidRequest

DEFAULT_PREFIX = "zq"

# No ':' in a prefix: the first ':' of every key ends it, so two prefixes
# can never produce the same key.
_PREFIX = re.compile(r"[A-Za-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class RedisTarget:
    url: str  # what redis-py's from_url receives (zq's own options removed)
    prefix: str  # key prefix, ending in ':'


def parse_uri(uri: str) -> RedisTarget:
    """Split zq's ``?prefix=NAME`` option off a Redis URI and check it."""
    parts = urlsplit(uri)
    if parts.scheme not in ("redis", "rediss"):
        raise InvalidRequest(f"Not a Redis URI: {uri!r}.")
    query = parse_qsl(parts.query, keep_blank_values=True)
    known = known_options(parts.scheme)
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
    return RedisTarget(url=urlunsplit(parts._replace(query=rest)), prefix=prefix + ":")


def known_options(scheme: str) -> set[str]:
    """The ``?name=`` options a Redis URI may carry: zq's and redis-py's."""
    known = {"prefix", "client_name", *URL_QUERY_ARGUMENT_PARSERS}
    if scheme == "rediss":
        known |= {name for name in inspect.signature(SSLConnection.__init__).parameters
                  if name.startswith("ssl_")}
    return known
