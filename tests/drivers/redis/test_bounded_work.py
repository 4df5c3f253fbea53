"""No script call does work that grows with the size of its queue.

Commands a script runs are watched with MONITOR (which shows the commands
scripts run, each with its keys), keeping only this test's key prefix, so
other users of the shared Redis do not count. Timing is never used.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from tests.drivers.redis.helpers import message
from zq.clock import ManualClock
from zq.storage.redis import RedisStorage
from zq.storage.redis.wire import Budget

HOLD = 3600


@pytest.fixture
def make_storage(redis_target: tuple[str, str]) -> Iterator[Callable[..., RedisStorage]]:
    url, base = redis_target
    opened: list[RedisStorage] = []

    def make(clock: ManualClock, budget: Budget | None = None) -> RedisStorage:
        prefix = f"{base}.{uuid.uuid4().hex[:8]}:"
        client = redis.Redis.from_url(url, decode_responses=True)
        store = RedisStorage(client, prefix, clock, budget)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def script_calls(storage: RedisStorage, action: Callable[[], object]) -> list[list[str]]:
    """The commands of each script call ``action`` made: [[EVALSHA ..., cmd, ...], ...]."""
    end = f"ECHO {storage.prefix}end"
    seen: list[str] = []
    watcher = redis.Redis(connection_pool=storage.client.connection_pool)
    with watcher.monitor() as monitor:
        def read() -> None:
            for entry in monitor.listen():
                seen.append(entry["command"])
                if entry["command"] == end:
                    return

        reader = threading.Thread(target=read)
        reader.start()
        storage.client.echo(f"{storage.prefix}ready")
        action()
        storage.client.echo(f"{storage.prefix}end")
        reader.join(30)
    calls: list[list[str]] = []
    for command in seen:
        if storage.prefix not in command or command.startswith("ECHO"):
            continue
        if command.startswith("EVALSHA"):
            calls.append([command])
        elif calls:
            calls[-1].append(command)
    # An EVALSHA that ran nothing was refused with NOSCRIPT (another test
    # flushed the shared server's scripts) and sent again after loading.
    return [call for call in calls if len(call) > 1]


def unbounded(command: str) -> bool:
    """A range read whose length the command itself does not bound."""
    words = command.split()
    if words[0] in ("ZRANGEBYSCORE", "ZRANGEBYLEX", "ZREVRANGEBYSCORE"):
        return "LIMIT" not in words
    if words[0] == "ZRANGE" and "BYSCORE" not in words:
        start, stop = int(words[2]), int(words[3])
        return stop < 0 <= start or stop - start > 10000
    if words[0] == "HVALS":  # the queue catalog: one entry per queue, not per message
        return not command.endswith(":queues")
    return words[0] in ("SMEMBERS", "HGETALL", "KEYS", "SCAN") and ":cm:" not in command


def fill(storage: RedisStorage, size: int) -> None:
    """``size`` messages in queue q, the first half held by live claims."""
    for start in range(0, size, 100):
        storage.messages.post("p", "q", [message(n, ttl=10 * HOLD)
                                               for n in range(min(100, size - start))],
                              client_id="poster")
    held = 0
    while held < size // 2:
        made = storage.claims.create("p", "q", ttl=HOLD, grace=0, limit=min(50, size // 2 - held),
                                     client_id=None)
        assert made is not None
        held += len(made.messages)


OPERATIONS: dict[str, Callable[[RedisStorage], object]] = {
    "stats": lambda s: s.queues.stats("p", "q"),
    "volume": lambda s: s.queues.volume(),
    "list": lambda s: s.messages.list("p", "q", limit=10),
    "list claimed": lambda s: s.messages.list("p", "q", limit=10, include_claimed=True),
    "claim": lambda s: s.claims.create("p", "q", ttl=HOLD, grace=0, limit=10,
                                       client_id=None),
    "pop": lambda s: s.messages.pop("p", "q", limit=10, client_id=None),
    "purge": lambda s: s.queues.purge("p", "q"),
    "delete queue": lambda s: s.queues.delete("p", "q"),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_commands_per_call_do_not_grow_with_the_queue(
    make_storage: Callable[..., RedisStorage], operation: str
) -> None:
    counts = []
    for size in (40, 400):
        storage = make_storage(ManualClock())
        fill(storage, size)
        calls = script_calls(storage, lambda s=storage: OPERATIONS[operation](s))
        assert len(calls) == 1
        assert [c for c in calls[0] if unbounded(c)] == []
        counts.append(len(calls[0]))
    assert counts[0] == counts[1], f"{operation}: {counts} commands for 40 and 400 messages"


def test_catching_up_is_bounded_per_call_and_done_once(
    make_storage: Callable[..., RedisStorage],
) -> None:
    """Claims that all expired at once: their messages move to ready a budget at a time."""
    budget = Budget(work=5, promote=20)
    per_call = []
    for size in (100, 400):
        clock = ManualClock()
        storage = make_storage(clock, budget)
        fill(storage, size)
        clock.advance(HOLD)
        calls = script_calls(storage, lambda s=storage: OPERATIONS["claim"](s))
        assert len(calls) == (size // 2 + budget.promote - 1) // budget.promote
        assert all(not unbounded(c) for call in calls for c in call)
        per_call.append(max(len(call) for call in calls))
        # Each message moved once: the next claim has nothing left to catch up on.
        assert len(script_calls(storage, lambda s=storage: OPERATIONS["claim"](s))) == 1
    # The same work per call (give or take the final call's own claim) for
    # four times the backlog: only the number of calls grew.
    assert per_call[1] <= per_call[0] + 5, per_call


@pytest.mark.parametrize("operation", ["purge", "delete queue"])
def test_gc_reclaims_a_purged_queue_a_batch_at_a_time(
    make_storage: Callable[..., RedisStorage], operation: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("zq.storage.redis.storage.GC_BATCH", 50)
    clock = ManualClock()
    storage = make_storage(clock)
    fill(storage, 400)
    OPERATIONS[operation](storage)
    calls = script_calls(storage, storage.gc)
    assert len(calls) >= 400 // 50
    assert all(len(call) < 50 * 4 for call in calls)
    left = [key for key in storage.client.scan_iter(match=f"{storage.prefix}*", count=10000)
            if key.split(":")[-2] in ("m", "c", "cm", "qo", "qc")]
    assert left == []
    assert storage.client.scard(f"{storage.prefix}trash") == 0


def test_counting_queues_reads_their_names_only(
    make_storage: Callable[..., RedisStorage],
) -> None:
    """with_count: one ZCARD, or the names in chunks of 1,000; never a queue's metadata."""
    storage = make_storage(ManualClock())
    for n in range(1205):
        storage.queues.create("p", f"q{n:04d}" if n % 2 else f"other{n:04d}", {"big": "x" * 100})
    assert storage.queues.count("p") == 1205
    assert storage.queues.count("p", name="q") == 602
    calls = script_calls(storage, lambda: (storage.queues.count("p"),
                                           storage.queues.count("p", name="q")))
    commands = [[c.split()[0] for c in call[1:]] for call in calls]
    assert commands == [["ZCARD"], ["ZRANGEBYLEX"] * 3]  # 1000, 205, then none
