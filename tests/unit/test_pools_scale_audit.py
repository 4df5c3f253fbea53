"""The pools benchmark's audit arithmetic and its guard on the machine's Redis."""

from __future__ import annotations

import pytest

from benchmarks import pools_scale


def phase() -> pools_scale.Phase:
    made = pools_scale.Phase("pools", [], plain=["a", "b"], policed=["c"])
    made.posted.update(a=30, b=20, c=10)
    made.deleted.update(a=25, b=20, c=6)
    return made


POOL_OF = {"a": "redis-a", "b": "postgresql", "c": "redis-a", "c-dlq": "redis-a"}


def test_every_message_accounted_for_per_pool() -> None:
    audit = pools_scale.account(phase(), POOL_OF, {"a": 5, "b": 0, "c": 3}, {"c-dlq": 1})
    assert audit["ok"] and audit["unaccounted"] == 0
    assert audit["pools"]["redis-a"]["posted"] == 40
    assert audit["pools"]["redis-a"]["dead_lettered"] == 1
    assert audit["pools"]["postgresql"]["queues"] == 1


def test_a_lost_message_is_a_mismatch_on_its_pool() -> None:
    audit = pools_scale.account(phase(), POOL_OF, {"a": 5, "b": 0, "c": 3}, {"c-dlq": 0})
    assert not audit["ok"]
    assert audit["pools"]["redis-a"]["unaccounted"] == 1
    assert audit["pools"]["postgresql"]["unaccounted"] == 0


def test_a_dead_letter_queue_on_another_pool_fails_the_audit() -> None:
    elsewhere = {**POOL_OF, "c-dlq": "postgresql"}
    audit = pools_scale.account(phase(), elsewhere, {"a": 5, "b": 0, "c": 3}, {"c-dlq": 1})
    assert not audit["ok"]


def test_the_machines_redis_is_refused() -> None:
    with pytest.raises(SystemExit):
        pools_scale.parse_args(["--redis", "redis://127.0.0.1:6379/0",
                                "--redis", "redis://127.0.0.1:7001/0"])
    args = pools_scale.parse_args(["--redis", "redis://127.0.0.1:7000/0",
                                   "--redis", "redis://127.0.0.1:7001/0"])
    assert len(args.redis) == 2
