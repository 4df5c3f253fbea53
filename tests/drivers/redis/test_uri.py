"""Storage URIs for Redis."""

from __future__ import annotations

import pytest

from zq.errors import InvalidRequest
from zq.storage.redis.uri import parse_uri


def test_default_prefix_and_untouched_url() -> None:
    target = parse_uri("redis://:secret@example.org:6380/3")
    assert target.prefix == "zq:"
    assert target.url == "redis://:secret@example.org:6380/3"


def test_prefix_is_taken_out_and_other_options_kept() -> None:
    target = parse_uri("rediss://user:pw@h/1?prefix=blue&socket_timeout=5")
    assert target.prefix == "blue:"
    assert target.url == "rediss://user:pw@h/1?socket_timeout=5"


def test_other_schemes_are_refused() -> None:
    with pytest.raises(InvalidRequest):
        parse_uri("http://h/0")


def test_sentinel_uri_names_the_sentinels_the_master_and_the_database() -> None:
    target = parse_uri("redis+sentinel://:s3cret@h1:26379,h2:26380,[::1]/mymaster/2"
                       "?prefix=blue&socket_timeout=5")
    assert target.sentinels == (("h1", 26379), ("h2", 26380), ("::1", 26379))
    assert target.master == "mymaster"
    assert target.prefix == "blue:"
    client = target.client(decode_responses=True)
    try:
        pool = client.connection_pool
        assert pool.service_name == "mymaster"
        settings = pool.connection_kwargs
        assert (settings["db"], settings["password"], settings["socket_timeout"]) == (
            2, "s3cret", 5.0)
        # The sentinels themselves are asked with a bound.
        asked = pool.sentinel_manager.sentinels[0].connection_pool.connection_kwargs
        assert asked["socket_timeout"] == 5.0
    finally:
        client.close()


def test_sentinel_uri_database_defaults_to_0() -> None:
    target = parse_uri("redis+sentinel://sentinel.example/mymaster")
    assert target.sentinels == (("sentinel.example", 26379),)
    assert target.client().connection_pool.connection_kwargs["db"] == 0


@pytest.mark.parametrize(("uri", "fragment"), [
    ("redis+sentinel://h1:26379", "MASTER"),
    ("redis+sentinel://h1:26379/m/x", "MASTER"),
    ("redis+sentinel://h1:26379/m/0/extra", "MASTER"),
    ("redis+sentinel:///m/0", "MASTER"),
    ("redis+sentinel://:pw@h1:port/m", "host or host:port"),
    ("redis+sentinel://h1:99999/m", "host or host:port"),
    ("redis+sentinel://h1/m?nonsense=1", "unknown"),
    ("rediss+sentinel://h1/m", "TLS through Sentinel"),
])
def test_malformed_sentinel_uris_are_refused(uri: str, fragment: str) -> None:
    with pytest.raises(InvalidRequest, match=fragment) as refused:
        parse_uri(uri)
    assert "pw" not in str(refused.value)


def test_sentinel_uri_reaches_the_redis_driver() -> None:
    from zq.storage import DRIVERS, check_uri, scheme_of

    uri = "redis+sentinel://h1,h2/mymaster/0"
    check_uri(uri)
    assert DRIVERS[scheme_of(uri)] == "zq.storage.redis:open_redis"
