"""The key layout version: checked at open, converted by ``zq db upgrade``."""

from __future__ import annotations

import re
import uuid

import pytest
import redis

from tests.drivers.redis.helpers import post, visible
from zq import cli
from zq.clock import ManualClock
from zq.errors import StorageUnavailable
from zq.storage.redis import layout, open_redis

NOW = ManualClock().now()


def write_layout_1(client: redis.Redis, prefix: str) -> dict[str, str]:
    """What zq before layout 2 wrote for two queues; the message ids by role."""
    p = prefix + ":"
    client.set(p + "qseq", 2)
    client.set(p + "marker", 7)
    ids = {}
    for qid, name in (("1", "q"), ("2", "other")):
        client.hset(p + "queues", f"1:p{name}", qid)
        client.hset(p + f"q:{qid}", mapping={"project": "p", "name": name, "meta": "{}"})
        client.zadd(p + "p:1:p", {name: 0})
    rows = [  # role, queue id, marker, expires, claim, claim expiry, delay until
        ("free", "1", 1, NOW + 300, "", 0, NOW),
        ("held", "1", 2, NOW + 120, "c1", NOW + 60, NOW),
        ("delayed", "1", 3, NOW + 300, "", 0, NOW + 30),
        ("expired", "1", 4, NOW - 1, "", 0, NOW),
        ("last", "1", 5, NOW + 300, "", 0, NOW),
        ("other1", "2", 6, NOW + 300, "", 0, NOW),
        ("other2", "2", 7, NOW + 300, "", 0, NOW),
    ]
    for role, qid, marker, expires, claim, cexp, delay in rows:
        mid = uuid.uuid4().hex
        ids[role] = mid
        client.hset(p + f"m:{mid}", mapping={
            "q": qid, "body": f'"{role}"', "ttl": 300, "created": repr(NOW),
            "expires": repr(expires), "client": "old", "claim": claim, "cexp": repr(cexp),
            "count": 1 if claim else 0, "hist": "[]", "marker": marker,
            "delay": repr(delay), "fp": "f"})
        client.zadd(p + f"qo:{qid}", {mid: marker})
        client.zadd(p + "xm", {mid: expires})
    client.hset(p + "c:c1", mapping={"q": "1", "ttl": 60, "grace": 60, "created": repr(NOW),
                                     "expires": repr(NOW + 60), "client": "old"})
    client.sadd(p + "cm:c1", ids["held"])
    client.zadd(p + "xc", {"c1": NOW + 60})
    client.sadd(p + "qc:1", "c1")
    return ids


@pytest.fixture
def old_data(redis_target: tuple[str, str]) -> tuple[str, dict[str, str]]:
    url, prefix = redis_target
    prefix = f"{prefix}.{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        ids = write_layout_1(client, prefix)
    finally:
        client.close()
    return f"{url}?prefix={prefix}", ids


def run_zq(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out.strip()


def test_layout_1_data_is_refused_naming_the_upgrade_command(
    old_data: tuple[str, dict[str, str]],
) -> None:
    uri, _ = old_data
    with pytest.raises(StorageUnavailable,
                       match=rf"layout 1.*`zq db upgrade --storage {re.escape(uri)}`"):
        open_redis(uri, clock=ManualClock())


def test_upgrade_converts_layout_1_and_everything_works_after(
    old_data: tuple[str, dict[str, str]], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uri, ids = old_data
    monkeypatch.setattr(layout, "UPGRADE_BATCH", 2)  # several calls, across queues
    clock = ManualClock()
    monkeypatch.setattr("zq.clock.SystemClock", lambda: clock)
    assert run_zq(capsys, "db", "upgrade", "--storage", uri) == \
        f"Converted {uri} from Redis key layout 1 to 2."
    assert run_zq(capsys, "db", "upgrade", "--storage", uri) == \
        f"{uri} is already at Redis key layout 2."

    storage = open_redis(uri, clock=clock)
    try:
        assert storage.client.exists(storage.prefix + "xm") == 0
        stats = storage.queues.stats("p", "q")
        assert (stats.free, stats.claimed) == (3, 1)
        assert (stats.oldest.id, stats.newest.id) == (ids["free"], ids["last"])
        assert visible(storage, "p", "q") == [ids[r] for r in ("free", "held", "delayed", "last")]
        assert visible(storage, "p", "other") == [ids["other1"], ids["other2"]]

        def claim() -> list[str]:
            made = storage.claims.create("p", "q", ttl=600, grace=0, limit=5,
                                         client_id=None)
            return [] if made is None else [m.id for m in made.messages]

        assert claim() == [ids["free"], ids["last"]]
        clock.advance(30)
        assert claim() == [ids["delayed"]]
        clock.advance(30)
        assert claim() == [ids["held"]]
        assert storage.queues.stats("p", "q").claimed == 4
    finally:
        storage.close()


def test_an_empty_prefix_is_marked_with_the_current_layout(
    redis_target: tuple[str, str],
) -> None:
    url, prefix = redis_target
    prefix = f"{prefix}.{uuid.uuid4().hex[:8]}"
    storage = open_redis(f"{url}?prefix={prefix}", clock=ManualClock())
    try:
        assert storage.client.get(f"{prefix}:layout") == layout.LAYOUT
        assert visible(storage, "p", "q") == []
        post(storage, "p", "q", 1)
    finally:
        storage.close()
    open_redis(f"{url}?prefix={prefix}", clock=ManualClock()).close()


def test_an_unknown_layout_is_refused(redis_target: tuple[str, str]) -> None:
    url, prefix = redis_target
    prefix = f"{prefix}.{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(url)
    try:
        client.set(f"{prefix}:layout", "9")
    finally:
        client.close()
    with pytest.raises(StorageUnavailable, match=r"layout 9.*upgrade zq"):
        open_redis(f"{url}?prefix={prefix}", clock=ManualClock())
