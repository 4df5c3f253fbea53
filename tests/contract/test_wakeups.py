"""Storage.wakeups.earliest_claimable: when each waited queue next has a claimable message.

The waiting claims' re-check (zq.waiting) asks it for every waited queue at
once and wakes the queues whose moment has come. The contract allows a
moment earlier than the truth (a waiter tries once for nothing), never a
later one; the cases below are exact on every driver.
"""

from __future__ import annotations

from zq.poison.backoff import EXPONENTIAL, BackoffPolicy
from zq.poison.breaker import BreakerPolicy
from zq.storage.delivery_rules import DeliveryRules

from .helpers import CLAIM_TTL, GRACE, claim, post


def earliest(storage, project, *queues):
    return storage.wakeups.earliest_claimable([(project, q) for q in queues])


def test_empty_and_missing_queues_are_left_out(storage, project):
    post(storage, project, "other")
    assert earliest(storage, project, "never-created") == {}
    assert earliest(storage, project) == {}
    assert storage.wakeups.earliest_claimable([]) == {}


def test_a_free_message_is_claimable_now(storage, project, clock):
    post(storage, project, "q")
    moments = earliest(storage, project, "q")
    assert set(moments) == {(project, "q")}
    assert moments[(project, "q")] <= clock.now()


def test_a_delayed_message_from_its_delay(storage, project, clock):
    post(storage, project, "q", delay=30)
    assert earliest(storage, project, "q") == {(project, "q"): clock.now() + 30}


def test_a_claimed_message_from_its_claim_expiry(storage, project, clock):
    post(storage, project, "q")
    claim(storage, project, "q")
    assert earliest(storage, project, "q") == {(project, "q"): clock.now() + CLAIM_TTL}
    clock.advance(CLAIM_TTL)
    assert earliest(storage, project, "q")[(project, "q")] <= clock.now()


def test_the_earliest_of_several_messages(storage, project, clock):
    post(storage, project, "q", delay=50)
    post(storage, project, "q")
    claim(storage, project, "q")  # held until now + 60
    post(storage, project, "q", delay=20)
    assert earliest(storage, project, "q") == {(project, "q"): clock.now() + 20}


def test_a_released_message_with_backoff_not_before_it_ends(storage, project, clock):
    post(storage, project, "q", ttl=3600)
    policy = BackoffPolicy(delay=10, max_delay=100, kind=EXPONENTIAL, jitter=0.0)
    claimed = storage.claims.create(project, "q", ttl=CLAIM_TTL, grace=GRACE, limit=1,
                                    client_id="c", rules=DeliveryRules(backoff=policy))
    storage.claims.release(project, "q", claimed.id, client_id=None)
    moment = earliest(storage, project, "q")[(project, "q")]
    assert clock.now() < moment <= clock.now() + 10


def test_an_expired_message_is_left_out_once_a_claim_tried(storage, project, clock):
    post(storage, project, "q", ttl=60, delay=30)
    clock.advance(61)
    # Redis removes expired messages when a call settles the queue: until
    # then the moment may be reported (a waiter tries once for nothing).
    assert earliest(storage, project, "q").get((project, "q"), 0) <= clock.now()
    assert claim(storage, project, "q") is None
    assert earliest(storage, project, "q") == {}


def test_many_queues_and_projects_in_one_call(storage, project, clock):
    post(storage, project, "a")
    post(storage, project, "b", delay=40)
    post(storage, project + "-other", "a", delay=10)
    keys = [(project, "a"), (project, "b"), (project, "c"), (project + "-other", "a")]
    moments = storage.wakeups.earliest_claimable(keys)
    assert set(moments) == {(project, "a"), (project, "b"), (project + "-other", "a")}
    assert moments[(project, "a")] <= clock.now()
    assert moments[(project, "b")] == clock.now() + 40
    assert moments[(project + "-other", "a")] == clock.now() + 10


def test_an_open_breaker_queue_not_before_its_next_probe(storage, project, clock):
    policy = BreakerPolicy(failure_ratio=0.5, min_failures=2, window=60, probe_interval=5,
                           close_after=1, auto_redrive_max=0)
    rules = DeliveryRules(breaker=policy)
    posted = post(storage, project, "q", 3)
    post(storage, project, "closed", 1)
    held = storage.claims.create(project, "q", ttl=CLAIM_TTL, grace=GRACE, limit=2,
                                 client_id="c", rules=rules)
    for message_id in posted[:2]:
        storage.messages.reject(project, "q", message_id, claim_id=held.id, client_id="c",
                                description="down", retry_after=0, rules=rules)
    assert storage.breakers.read(project, "q", policy, clock.now()).state == "open"
    # Three free messages, but no claim delivers before the first probe.
    moments = earliest(storage, project, "q", "closed")
    assert moments[(project, "q")] == clock.now() + 5
    assert moments[(project, "closed")] <= clock.now()
    clock.advance(5)
    probe = storage.claims.create(project, "q", ttl=CLAIM_TTL, grace=GRACE, limit=5,
                                  client_id="c", rules=rules)
    assert len(probe.messages) == 1
    assert earliest(storage, project, "q")[(project, "q")] == clock.now() + 5
    # Closed by its probe: claimable at once again.
    storage.messages.delete(project, "q", probe.messages[0].id, claim_id=probe.id,
                            client_id="c", rules=rules)
    assert storage.breakers.read(project, "q", policy, clock.now()).state == "closed"
    assert earliest(storage, project, "q")[(project, "q")] <= clock.now()
