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
