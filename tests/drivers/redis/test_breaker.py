"""The breaker and the blame split on Redis: keys, lapses after gc, the Lua-side rules.

The behaviour itself is the contract's (tests/contract/test_breaker.py and
test_blame.py); these pin what only this driver can get wrong: where the
keys live and when they go, a lapse still seen after gc collected its
claim, the window's outcomes trimmed by the scripts that write them, and
the Lua copies of zq.poison's rules (the exhaustion description, the
history merged by time).
"""

from __future__ import annotations

from tests.drivers.redis.helpers import post
from tests.drivers.redis.test_bounded_work import script_calls
from zq.clock import ManualClock
from zq.poison import blame, moves
from zq.poison.breaker import OPEN, BreakerPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import ConsumerEntry
from zq.storage.redis import RedisStorage
from zq.storage.redis.wire import history

POLICY = BreakerPolicy(failure_ratio=0.5, min_failures=3, window=60, probe_interval=5,
                       close_after=2)
BREAKER = DeliveryRules(breaker=POLICY)
SPLIT = DeliveryRules(blame_split=True)
CLAIM = 60


def qid_of(storage: RedisStorage, project: str, queue: str) -> str:
    found = storage.client.hget(storage.prefix + "queues",
                                f"{len(project.encode())}:{project}{queue}")
    assert found is not None
    return found


def breaker_keys(storage: RedisStorage, qid: str) -> list[str]:
    return [key for key in (f"{storage.prefix}{head}:{qid}" for head in ("qk", "qkf", "qkm", "qks"))
            if storage.client.exists(key)]


def take(storage: RedisStorage, project: str, client_id: str | None, limit: int = 10, *,
         rules: DeliveryRules = BREAKER, ttl: int = CLAIM):
    consumer = None if client_id is None else ConsumerEntry(client_id, keep_for=3600)
    return storage.claims.create(
        project, "q", ttl=ttl, grace=0, limit=limit, client_id=client_id,
        rules=DeliveryRules(dead_letter=rules.dead_letter, consumer=consumer,
                            breaker=rules.breaker, blame_split=rules.blame_split))


def trip(storage: RedisStorage, project: str) -> list[str]:
    posted = post(storage, project, "q", 3)
    held = take(storage, project, "c")
    for mid in posted:
        storage.messages.reject(project, "q", mid, claim_id=held.id, client_id="c",
                                description="db down", retry_after=0, rules=BREAKER)
    return posted


def test_breaker_keys_live_beside_the_queue_and_go_with_a_purge_or_delete(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    trip(storage, project)
    qid = qid_of(storage, project, "q")
    assert storage.breakers.read(project, "q", POLICY, clock.now()).state == OPEN
    assert len(breaker_keys(storage, qid)) == 3  # record, failures, failed messages
    storage.queues.purge(project, "q")
    assert breaker_keys(storage, qid) == []
    trip(storage, project)
    qid = qid_of(storage, project, "q")
    assert breaker_keys(storage, qid) != []
    storage.queues.delete(project, "q")
    assert breaker_keys(storage, qid) == []


def test_without_rules_nothing_of_the_breaker_is_written(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    posted = post(storage, project, "q", 2)
    held = take(storage, project, "c", rules=DeliveryRules())
    storage.messages.reject(project, "q", posted[0], claim_id=held.id, client_id="c",
                            description="db down", retry_after=0)
    storage.messages.delete(project, "q", posted[1], claim_id=held.id, client_id="c")
    clock.advance(CLAIM)
    take(storage, project, "d", rules=DeliveryRules())
    assert breaker_keys(storage, qid_of(storage, project, "q")) == []
    fields = storage.client.hkeys(f"{storage.prefix}m:{posted[0]}")
    assert not {"fc", "lf", "lw", "lh"} & set(fields)


def test_a_lapse_is_seen_after_gc_collected_its_claim(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    posted = post(storage, project, "q", 1)
    lapsed = take(storage, project, "a", rules=SPLIT)
    clock.advance(CLAIM + 1)
    storage.gc()  # the claim is gone; the message still carries its id and expiry
    assert storage.client.exists(f"{storage.prefix}c:{lapsed.id}") == 0
    again = take(storage, project, "b", rules=SPLIT)
    assert [m.id for m in again.messages] == posted
    record = storage.messages.get(project, "q", posted[0])
    # a stopped claiming: the lapse is its, found by its consumer log record.
    assert (record.forgiven_count, record.lapsed_with) == (1, ("a",))
    assert [(e["client_id"], e["charged_to"]) for e in record.history] == [
        ("a", blame.CONSUMER)]


def test_a_lapse_after_gc_still_counts_for_the_breaker(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    posted = post(storage, project, "q", 3)
    take(storage, project, "a", ttl=30)
    clock.advance(30)
    storage.gc()
    take(storage, project, "b")  # sees three lapses: three failed messages
    read = storage.breakers.read(project, "q", POLICY, clock.now())
    assert read.state == OPEN
    assert [storage.messages.get(project, "q", m).claim_count for m in posted] == [2, 2, 2]


def test_outcomes_older_than_the_window_are_trimmed_by_the_next_write(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    posted = post(storage, project, "q", 4)
    held = take(storage, project, "c", ttl=600)
    storage.messages.delete(project, "q", posted[0], claim_id=held.id, client_id="c",
                            rules=BREAKER)
    storage.messages.reject(project, "q", posted[1], claim_id=held.id, client_id="c",
                            description="x", retry_after=600, rules=BREAKER)
    qid = qid_of(storage, project, "q")
    clock.advance(POLICY.window + 1)
    storage.messages.reject(project, "q", posted[2], claim_id=held.id, client_id="c",
                            description="y", retry_after=600, rules=BREAKER)
    prefix = storage.prefix
    assert storage.client.zcard(f"{prefix}qkf:{qid}") == 1
    assert storage.client.zrange(f"{prefix}qkm:{qid}", 0, -1) == [posted[2]]
    assert storage.client.zcard(f"{prefix}qks:{qid}") == 0


def test_the_exhaustion_description_is_zq_poisons_whatever_the_client_ids(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    """Client-IDs with Lua pattern characters and the placeholders themselves."""
    rules = DeliveryRules(blame_split=True,
                          dead_letter=DeadLetterPolicy(max_claim_count=1, queue="dlq"))
    first, second = "a%1{2}", "{1}b%"
    posted = post(storage, project, "q", 1)
    take(storage, project, first, rules=rules)
    clock.advance(CLAIM)
    take(storage, project, second, rules=rules)
    clock.advance(CLAIM)
    assert take(storage, project, "c", rules=rules) is None
    moved = storage.messages.get(project, "dlq", posted[0])
    assert moved.history[-1]["description"] == blame.exhaustion_description([first, second])
    assert moved.history[-1]["reason"] == moves.REASON_LAPSED


def test_lapse_entries_merge_into_the_moves_by_time() -> None:
    moved = ('[{"queue":"q","reason":"rejected","time":10.0},'
             '{"queue":"d","reason":"redriven","time":30.5}]')
    lapses = ('{"queue":"q","reason":"lapsed","time":5.0,"client_id":"a","charged_to":"consumer"}\n'
              '{"queue":"q","reason":"lapsed","time":30.5,"client_id":null,"charged_to":"message"}')
    assert [(e["reason"], e["time"]) for e in history(moved, lapses)] == [
        ("lapsed", 5.0), ("rejected", 10.0), ("lapsed", 30.5), ("redriven", 30.5)]
    assert history("[]", "") == []


def test_blame_reads_the_lapsed_consumers_claims_not_the_whole_log(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    """A busy queue's consumer log holds every claim of the last hour: the
    claim that discovers a lapse reads the lapsed consumer's index instead,
    and drops what it finds settled."""
    busy = post(storage, project, "q", 40)
    for mid in busy:  # b claims and deletes 40 times: 40 settled claims in the log
        made = take(storage, project, "b", 1, rules=SPLIT)
        assert [m.id for m in made.messages] == [mid]
        storage.messages.delete(project, "q", mid, claim_id=made.id, client_id="b",
                                settle_claim=True)
    [lapsing] = post(storage, project, "q", 1)
    take(storage, project, "a", 1, rules=SPLIT)
    clock.advance(CLAIM)
    calls = script_calls(storage, lambda: take(storage, project, "b", 1, rules=SPLIT))
    [call] = calls
    assert not [c for c in call if c.startswith(("HGETALL", "HVALS", "HSCAN"))]
    assert len([c for c in call if c.startswith("HGET ")]) < 10
    record = storage.messages.get(project, "q", lapsing)
    assert record.forgiven_count == 1  # a made no claim since: its lapse
    # b's settled claims were never read; a's lapsed one stays indexed.
    index = f"{storage.prefix}ub:{len(project)}:{project}1:qa"
    assert storage.client.zcard(index) == 1


def test_settled_claims_leave_the_index_when_read_and_forget_drops_it(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    posted = post(storage, project, "q", 3)
    for mid in posted[:2]:
        made = take(storage, project, "a", 1, rules=SPLIT)
        storage.messages.delete(project, "q", mid, claim_id=made.id, client_id="a",
                                settle_claim=True)
    take(storage, project, "a", 1, rules=SPLIT)  # posted[2], lapses
    index = f"{storage.prefix}ub:{len(project)}:{project}1:qa"
    assert storage.client.zcard(index) == 3
    clock.advance(CLAIM)
    take(storage, project, "b", 1, rules=SPLIT)
    assert storage.client.zcard(index) == 1  # the two settled ones dropped
    storage.consumers.forget(project, "q")
    assert storage.client.exists(index, f"{storage.prefix}ul:{len(project)}:{project}q") == 0


def test_a_lapse_during_the_outage_seen_after_the_close_is_forgiven(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    """The claim expired while the breaker was open; the walk that sees it
    comes after the close: still the outage's (as on SQL, outage_at)."""
    posted = post(storage, project, "q", 4)
    held = take(storage, project, "c", 3, ttl=600)
    lapsing = take(storage, project, "d", 1, ttl=30)
    for mid in posted[:3]:
        storage.messages.reject(project, "q", mid, claim_id=held.id, client_id="c",
                                description="db down", retry_after=600, rules=BREAKER)
    assert [m.id for m in lapsing.messages] == posted[3:]
    clock.advance(31)  # d's claim lapsed (at 30) while the breaker was open
    storage.breakers.force(project, "q", "closed", POLICY, clock.now())
    clock.advance(1)
    again = take(storage, project, "e")
    assert [m.id for m in again.messages] == posted[3:]
    assert storage.messages.get(project, "q", posted[3]).forgiven_count == 1
