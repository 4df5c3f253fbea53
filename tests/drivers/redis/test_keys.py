"""Queue names and project ids never collide in the key layout."""

from __future__ import annotations

import pytest

from tests.drivers.redis.helpers import post, visible
from zq.clock import ManualClock
from zq.errors import InvalidRequest
from zq.storage.redis import RedisStorage, open_redis

NAMES = ["a", "b", "a:b", "b:c", "a.b", "a:b:c", "a.b.c", "1:a", "q:1", "qo:1", ":", "."]


def test_colon_split_between_project_and_queue_is_two_queues(
    storage: RedisStorage, project: str
) -> None:
    left, right = f"{project}:a", f"{project}"
    first = post(storage, left + ":b", "c")   # project 'P:a:b', queue 'c'
    second = post(storage, left, "b:c", 2)    # project 'P:a', queue 'b:c'
    third = post(storage, right, "a:b:c", 3)  # project 'P', queue 'a:b:c'
    assert visible(storage, left + ":b", "c") == first
    assert visible(storage, left, "b:c") == second
    assert visible(storage, right, "a:b:c") == third
    assert [q.name for q in storage.queues.list(left)] == ["b:c"]


@pytest.mark.parametrize("separator", [":", ".", "\x00", " ", "{", "*"])
def test_separator_in_names_keeps_queues_apart(
    storage: RedisStorage, project: str, separator: str
) -> None:
    pairs = [(project + separator + "x", "y"), (project, "x" + separator + "y")]
    posted = {pair: post(storage, *pair, count=i + 1) for i, pair in enumerate(pairs)}
    for pair, ids in posted.items():
        assert visible(storage, *pair) == ids
        assert storage.queues.stats(*pair).total == len(ids)


def test_every_tricky_name_is_its_own_queue(storage: RedisStorage, project: str) -> None:
    posted = {name: post(storage, project, name, i + 1) for i, name in enumerate(NAMES)}
    for name, ids in posted.items():
        assert visible(storage, project, name) == ids
    assert [q.name for q in storage.queues.list(project, limit=100)] == sorted(NAMES)
    storage.queues.delete(project, "a:b")
    assert visible(storage, project, "a:b") == []
    assert visible(storage, project, "a") == posted["a"]
    assert visible(storage, project, "b:c") == posted["b:c"]


def test_message_id_shaped_like_other_keys_is_simply_missing(
    storage: RedisStorage, project: str
) -> None:
    [mid] = post(storage, project, "q")
    for bogus in ["", ":", f"{mid}:x", "1", "../" + mid]:
        assert storage.messages.get_many(project, "q", [bogus]) == []
        storage.messages.delete(project, "q", bogus, claim_id=None, client_id=None)
    assert visible(storage, project, "q") == [mid]


def test_prefixes_isolate_deployments(redis_target: tuple[str, str]) -> None:
    url, prefix = redis_target
    clock = ManualClock()
    one = open_redis(f"{url}?prefix={prefix}.one", clock=clock)
    two = open_redis(f"{url}?prefix={prefix}.one.two", clock=clock)
    try:
        ids = post(one, "p", "q", 2)
        assert visible(one, "p", "q") == ids
        assert visible(two, "p", "q") == []
        assert two.events.read() == []
    finally:
        one.close()
        two.close()


@pytest.mark.parametrize("prefix", ["a:b", "", "x" * 65, "a*b"])
def test_bad_prefix_is_refused(prefix: str) -> None:
    with pytest.raises(InvalidRequest):
        open_redis(f"redis://127.0.0.1:6379/0?prefix={prefix}", clock=ManualClock())
