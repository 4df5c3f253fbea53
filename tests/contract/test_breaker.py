"""The breaker (zq.storage.breakers): counted in the reject/delete/claim steps.

Every driver with ``Storage.has_breaker``; the others are skipped until
they carry it out.
"""

from __future__ import annotations

import pytest

from zq import events
from zq.poison import moves
from zq.poison.breaker import CLOSED, HALF_OPEN, OPEN, BreakerPolicy
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import ConsumerEntry

from .helpers import CLAIM_TTL, GRACE, events_of, ids, post

TTL = 3600
POLICY = BreakerPolicy(failure_ratio=0.5, min_failures=3, window=60, probe_interval=5,
                       close_after=2, auto_redrive_max=1)
RULES = DeliveryRules(breaker=POLICY)
DLQ = DeadLetterPolicy(max_claim_count=2, queue="dlq")


@pytest.fixture(autouse=True)
def _only_with_breaker(storage):
    if not storage.has_breaker:
        pytest.skip("this driver does not carry out the breaker yet (Storage.has_breaker)")


def take(storage, project, limit=10, *, rules=RULES, client_id="consumer", queue="q",
         ttl=CLAIM_TTL):
    consumer = None if client_id is None else ConsumerEntry(client_id, keep_for=3600)
    return storage.claims.create(project, queue, ttl=ttl, grace=GRACE, limit=limit,
                                 client_id=client_id,
                                 rules=DeliveryRules(dead_letter=rules.dead_letter,
                                                     backoff=rules.backoff,
                                                     consumer=consumer, breaker=rules.breaker,
                                                     blame_split=rules.blame_split))


def fail(storage, project, message_id, claim_id, description="db down", *, rules=RULES,
         retry_after=0, queue="q"):
    storage.messages.reject(project, queue, message_id, claim_id=claim_id,
                            client_id="consumer", description=description,
                            retry_after=retry_after, rules=rules)


def succeed(storage, project, message_id, claim_id, *, rules=RULES, queue="q"):
    storage.messages.delete(project, queue, message_id, claim_id=claim_id,
                            client_id="consumer", rules=rules)


def state(storage, project, clock, queue="q"):
    return storage.breakers.read(project, queue, POLICY, clock.now())


def breaker_events(storage, project):
    return [e.detail for e in events_of(storage, project, events.BREAKER)]


def trip(storage, project, clock, count=3, *, extra=0):
    """Post ``count + extra`` messages, claim them all, fail ``count``: the breaker opens."""
    posted = post(storage, project, "q", count + extra, ttl=TTL)
    held = take(storage, project, count + extra)
    for message_id in posted[:count]:
        fail(storage, project, message_id, held.id)
    return posted, held


def test_nothing_stored_reads_closed(storage, project, clock):
    post(storage, project, "q", 1)
    read = state(storage, project, clock)
    assert (read.state, read.description, read.tripped_at, read.redrive_due) == (
        CLOSED, None, None, False)


def test_failures_of_enough_messages_trip_it(storage, project, clock):
    posted = post(storage, project, "q", 3, ttl=TTL)
    held = take(storage, project, 3)
    fail(storage, project, posted[0], held.id, "db down")
    fail(storage, project, posted[1], held.id, "db down")
    # Two distinct failed messages of the three it needs: still closed.
    assert state(storage, project, clock).state == CLOSED
    assert state(storage, project, clock).description == "db down"
    clock.advance(1)
    fail(storage, project, posted[2], held.id, "timeout")
    read = state(storage, project, clock)
    assert (read.state, read.since, read.tripped_at) == (OPEN, clock.now(), clock.now())
    # The most common description of the window; a tie would go to the latest.
    assert read.description == "db down"
    assert breaker_events(storage, project) == [events.breaker_detail(
        OPEN, CLOSED, "db down", 3, 0)]
    # The tripping failure is charged like the ones before it.
    assert [storage.messages.get(project, "q", m).forgiven_count for m in posted] == [0, 0, 0]


def test_one_poison_message_failing_again_and_again_does_not_trip_it(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    for _ in range(6):
        held = take(storage, project)
        fail(storage, project, posted[0], held.id, "poison")
    assert state(storage, project, clock).state == CLOSED


def test_successes_keep_the_ratio_below(storage, project, clock):
    posted = post(storage, project, "q", 10, ttl=TTL)
    held = take(storage, project, 10)
    for message_id in posted[:4]:
        succeed(storage, project, message_id, held.id)
    for message_id in posted[4:7]:
        fail(storage, project, message_id, held.id)
    # 3 failures of 7 outcomes, below one half.
    assert state(storage, project, clock).state == CLOSED
    fail(storage, project, posted[7], held.id)
    assert state(storage, project, clock).state == OPEN  # 4 of 8


def test_outcomes_older_than_the_window_do_not_count(storage, project, clock):
    posted = post(storage, project, "q", 3, ttl=TTL)
    held = take(storage, project, 3, ttl=300)
    fail(storage, project, posted[0], held.id)
    fail(storage, project, posted[1], held.id)
    clock.advance(61)
    fail(storage, project, posted[2], held.id)  # the claim (ttl 300) still holds it
    assert state(storage, project, clock).state == CLOSED


def test_without_the_breaker_rule_nothing_is_recorded(storage, project, clock):
    posted = post(storage, project, "q", 3, ttl=TTL)
    held = take(storage, project, 3, rules=DeliveryRules())
    for message_id in posted:
        fail(storage, project, message_id, held.id, rules=DeliveryRules())
    assert state(storage, project, clock).state == CLOSED
    assert state(storage, project, clock).description is None
    assert storage.messages.get(project, "q", posted[0]).last_failure is None


def test_failures_while_open_are_forgiven(storage, project, clock):
    posted, held = trip(storage, project, clock, extra=2)
    fail(storage, project, posted[3], held.id, retry_after=None)
    record = storage.messages.get(project, "q", posted[3])
    assert (record.claim_count, record.forgiven_count) == (1, 1)
    assert storage.messages.get(project, "q", posted[2]).forgiven_count == 0
    assert len(breaker_events(storage, project)) == 1


def test_a_claim_that_lapses_while_open_is_forgiven(storage, project, clock):
    posted, _ = trip(storage, project, clock, extra=1)
    clock.advance(CLAIM_TTL)  # the claim on posted[3] lapses while the breaker is open
    storage.messages.delete_many(project, "q", posted[:3], client_id="c")
    probe = take(storage, project)
    assert [(m.id, m.claim_count) for m in probe.messages] == [(posted[3], 2)]
    assert storage.messages.get(project, "q", posted[3]).forgiven_count == 1


def test_forgiven_deliveries_do_not_count_toward_max_claim_count(storage, project, clock):
    rules = DeliveryRules(breaker=POLICY, dead_letter=DLQ)
    posted = post(storage, project, "q", 4, ttl=TTL)
    held = take(storage, project, 4, rules=rules)
    for message_id in posted[:3]:
        fail(storage, project, message_id, held.id, rules=rules)
    fail(storage, project, posted[3], held.id, rules=rules)  # forgiven: open
    storage.breakers.force(project, "q", CLOSED, POLICY, clock.now())
    # posted[3] was claimed once and forgiven once: two more deliveries.
    for count in (2, 3):
        again = take(storage, project, 4, rules=rules)
        assert posted[3] in ids(again.messages)
        assert {m.id: m.claim_count for m in again.messages}[posted[3]] == count
        for m in again.messages:
            storage.messages.reject(project, "q", m.id, claim_id=again.id, client_id="c",
                                    description=None, retry_after=0)
    assert take(storage, project, 4, rules=rules) is None
    assert ids(storage.messages.list(project, "dlq")) == posted


def test_terminal_reject_while_open_is_held_as_a_retry(storage, project, clock):
    posted, held = trip(storage, project, clock, extra=1)
    move = moves.rejected("dlq", None, "db down again")
    assert storage.messages.move(project, "q", [posted[3]], move, claim_id=held.id,
                                 client_id="consumer", rules=RULES) == [posted[3]]
    record = storage.messages.get(project, "q", posted[3])
    assert (record.claim_id, record.forgiven_count, record.history) == (None, 1, [])
    assert record.last_failure == "db down again"
    assert storage.messages.list(project, "dlq") == []
    held_event = events_of(storage, project, events.REJECTED)[-1]
    assert (held_event.message_id, held_event.detail) == (posted[3], events.rejected_detail(
        "db down again", None, held=True))


def test_terminal_reject_while_closed_moves_and_counts(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    held = take(storage, project)
    move = moves.rejected("dlq", None, "bad input")
    assert storage.messages.move(project, "q", posted, move, claim_id=held.id,
                                 client_id="consumer", rules=RULES) == posted
    moved = storage.messages.get(project, "dlq", posted[0])
    assert moved.last_failure == "bad input"
    assert state(storage, project, clock).description == "bad input"


def test_last_failure_is_the_truncated_description(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=TTL)
    held = take(storage, project)
    fail(storage, project, posted[0], held.id, "x" * 500)
    assert storage.messages.get(project, "q", posted[0]).last_failure == "x" * 200
    held = take(storage, project)
    fail(storage, project, posted[0], held.id, None)
    assert storage.messages.get(project, "q", posted[0]).last_failure is None


def test_open_breaker_delivers_one_probe_per_interval(storage, project, clock):
    trip(storage, project, clock)
    post(storage, project, "q", 3, ttl=TTL)
    assert take(storage, project) is None
    assert storage.messages.pop(project, "q", limit=5, client_id="c", rules=RULES) == []
    clock.advance(5)
    probe = take(storage, project, 10)
    assert len(probe.messages) == 1
    # One probe outstanding: nothing more, however long it takes.
    clock.advance(30)
    assert take(storage, project) is None


def test_successful_probes_close_it(storage, project, clock):
    trip(storage, project, clock)
    post(storage, project, "q", 3, ttl=TTL)
    clock.advance(5)
    probe = take(storage, project)
    succeed(storage, project, probe.messages[0].id, probe.id)
    read = state(storage, project, clock)
    assert read.state == HALF_OPEN
    # In half-open the next probe goes at once, still one at a time.
    probe = take(storage, project, 10)
    assert len(probe.messages) == 1
    clock.advance(1)
    succeed(storage, project, probe.messages[0].id, probe.id)
    read = state(storage, project, clock)
    assert (read.state, read.since, read.closed_at, read.redrive_due) == (
        CLOSED, clock.now(), clock.now(), True)
    assert read.tripped_at == clock.now() - 6
    assert [(d["state"], d["previous"]) for d in breaker_events(storage, project)] == [
        (OPEN, CLOSED), (HALF_OPEN, OPEN), (CLOSED, HALF_OPEN)]
    # The window was cleared: the old failures do not trip it again.
    last = take(storage, project, 1)
    assert len(last.messages) == 1
    fail(storage, project, last.messages[0].id, last.id)
    assert state(storage, project, clock).state == CLOSED
    storage.breakers.redrive_done(project, "q", read.closed_at - 1)
    assert state(storage, project, clock).redrive_due
    storage.breakers.redrive_done(project, "q", read.closed_at)
    assert not state(storage, project, clock).redrive_due


def test_a_non_probe_success_does_not_close_it(storage, project, clock):
    posted, held = trip(storage, project, clock, extra=2)
    succeed(storage, project, posted[3], held.id)
    storage.messages.delete_many(project, "q", [posted[4]], claim_ids=[held.id],
                                 client_id="c", rules=RULES)
    assert state(storage, project, clock).state == OPEN


def test_a_failed_probe_opens_it_again(storage, project, clock):
    trip(storage, project, clock)
    post(storage, project, "q", 2, ttl=TTL)
    clock.advance(5)
    probe = take(storage, project)
    succeed(storage, project, probe.messages[0].id, probe.id)
    probe = take(storage, project)
    fail(storage, project, probe.messages[0].id, probe.id)
    read = state(storage, project, clock)
    assert (read.state, read.since) == (OPEN, clock.now())
    assert storage.messages.get(project, "q", probe.messages[0].id).forgiven_count == 1
    assert take(storage, project) is None
    clock.advance(5)
    assert len(take(storage, project).messages) == 1
    assert [d["state"] for d in breaker_events(storage, project)] == [OPEN, HALF_OPEN, OPEN]


def test_a_lapsed_probe_is_a_failed_probe(storage, project, clock):
    trip(storage, project, clock)
    post(storage, project, "q", 2, ttl=TTL)
    clock.advance(5)
    probe = take(storage, project, ttl=60)
    succeed(storage, project, probe.messages[0].id, probe.id)
    assert state(storage, project, clock).state == HALF_OPEN
    lapsing = take(storage, project, ttl=60)
    clock.advance(60)
    # The next claim finds the probe lapsed: open again, the next probe an interval on.
    assert take(storage, project) is None
    assert state(storage, project, clock).state == OPEN
    clock.advance(5)
    again = take(storage, project)
    assert len(again.messages) == 1
    # The lapse of a message while the breaker is open is forgiven.
    assert storage.messages.get(project, "q", lapsing.messages[0].id).forgiven_count == 1


def test_a_lapse_is_a_failure(storage, project, clock):
    posted = post(storage, project, "q", 4, ttl=TTL)
    lapsing = take(storage, project, 1, ttl=60)
    clock.advance(60)
    held = take(storage, project, 4)  # discovers the lapse of posted[0]
    assert ids(held.messages) == posted
    fail(storage, project, posted[1], held.id)
    fail(storage, project, posted[2], held.id)
    # The lapse and two rejects: three distinct messages failed.
    read = state(storage, project, clock)
    assert read.state == OPEN
    assert lapsing.messages[0].id == posted[0]


def test_force_open_and_closed(storage, project, clock):
    post(storage, project, "q", 2, ttl=TTL)
    forced = storage.breakers.force(project, "q", OPEN, POLICY, clock.now())
    assert (forced.state, forced.tripped_at) == (OPEN, clock.now())
    assert take(storage, project) is None
    # Forcing the state it is in changes nothing.
    assert storage.breakers.force(project, "q", OPEN, POLICY, clock.now()).state == OPEN
    clock.advance(2)
    closed = storage.breakers.force(project, "q", CLOSED, POLICY, clock.now())
    assert (closed.state, closed.closed_at, closed.redrive_due) == (CLOSED, clock.now(), True)
    assert len(take(storage, project).messages) == 2
    assert [(d["state"], d["forced"]) for d in breaker_events(storage, project)] == [
        (OPEN, True), (CLOSED, True)]


def test_no_auto_redrive_no_redrive_due(storage, project, clock):
    post(storage, project, "q", 1, ttl=TTL)
    policy = BreakerPolicy(failure_ratio=0.5, min_failures=3, auto_redrive_max=0)
    storage.breakers.force(project, "q", OPEN, policy, clock.now())
    assert not storage.breakers.force(project, "q", CLOSED, policy, clock.now()).redrive_due


def test_queue_delete_and_purge_drop_the_breaker(storage, project, clock):
    trip(storage, project, clock)
    storage.queues.purge(project, "q")
    assert state(storage, project, clock).state == CLOSED
    trip(storage, project, clock)
    storage.queues.delete(project, "q")
    assert state(storage, project, clock).state == CLOSED


def test_moves_keep_forgiven_count_and_last_failure_a_redrive_resets_it(storage, project, clock):
    posted, held = trip(storage, project, clock, extra=1)
    fail(storage, project, posted[3], held.id, "still down")
    moved = storage.messages.move(project, "q", [posted[3]], moves.rejected("dlq", None, "x"),
                                  client_id=None)
    assert moved == [posted[3]]
    record = storage.messages.get(project, "dlq", posted[3])
    assert (record.forgiven_count, record.last_failure) == (1, "still down")
    storage.messages.move(project, "dlq", [posted[3]], moves.redriven("q", TTL), client_id=None)
    record = storage.messages.get(project, "q", posted[3])
    assert (record.claim_count, record.forgiven_count) == (0, 0)


def test_projects_and_queues_have_their_own_breaker(storage, project, clock):
    trip(storage, project, clock)
    assert state(storage, project, clock, "other").state == CLOSED
    post(storage, project, "other", 1, ttl=TTL)
    assert take(storage, project, queue="other") is not None


def test_forgiveness_outlives_the_breaker(storage, project, clock):
    # The breaker turned off later (claims without it: on PostgreSQL the
    # one-statement claim), what was forgiven still does not count.
    rules = DeliveryRules(breaker=POLICY, dead_letter=DLQ)
    posted, held = trip(storage, project, clock, extra=1)
    fail(storage, project, posted[3], held.id, rules=rules)  # forgiven: open
    plain = DeliveryRules(dead_letter=DLQ)
    counts = []
    while (again := take(storage, project, 10, rules=plain)) is not None:
        counts += [m.claim_count for m in again.messages if m.id == posted[3]]
        storage.claims.release(project, "q", again.id, client_id="c")
    # Claimed once before, forgiven once: two more deliveries, then moved.
    assert counts == [2, 3]
    assert posted[3] in ids(storage.messages.list(project, "dlq"))


def test_a_poison_message_at_the_head_does_not_keep_it_open(storage, project, clock):
    # The outage is over, but the message at the head is poison: it fails
    # every delivery. Its failed probe holds it back, so the next probes go
    # to the healthy messages behind it and close the breaker.
    posted, _ = trip(storage, project, clock)
    poison = posted[0]
    healthy = post(storage, project, "q", 3, ttl=TTL)
    clock.advance(5)
    probe = take(storage, project)
    assert ids(probe.messages) == [poison]
    fail(storage, project, poison, probe.id, "poison")
    probes = []
    for _ in range(POLICY.close_after):
        clock.advance(POLICY.probe_interval)
        probe = take(storage, project)
        assert probe is not None and len(probe.messages) == 1
        probes += ids(probe.messages)
        # Whoever takes the poison message fails; every other one is fine.
        if probe.messages[0].id == poison:
            fail(storage, project, poison, probe.id, "poison")
        else:
            succeed(storage, project, probe.messages[0].id, probe.id)
    assert poison not in probes
    read = state(storage, project, clock)
    assert read.state == CLOSED
    # Not lost: claimable again once its hold is over, its failure forgiven.
    kept = storage.messages.get(project, "q", poison)
    assert kept.forgiven_count == 1
    clock.advance(POLICY.probe_interval * (POLICY.close_after + 1))
    assert poison in ids(take(storage, project, 10).messages)
    assert set(healthy) - set(probes)  # and the rest of the backlog is still there


def test_a_probe_that_lapses_is_held_back_too(storage, project, clock):
    posted, _ = trip(storage, project, clock)
    healthy = post(storage, project, "q", 2, ttl=TTL)
    clock.advance(5)
    probe = take(storage, project, ttl=60)
    assert ids(probe.messages) == [posted[0]]
    clock.advance(60)  # it crashed its consumer: the probe's claim lapses
    assert take(storage, project) is None  # the lapse is seen: the next probe an interval on
    assert state(storage, project, clock).state == OPEN
    lapsed = storage.messages.get(project, "q", posted[0])
    assert lapsed.forgiven_count == 1
    for _ in range(POLICY.close_after):
        clock.advance(POLICY.probe_interval)
        probe = take(storage, project)
        assert ids(probe.messages) != [posted[0]]
        succeed(storage, project, probe.messages[0].id, probe.id)
    assert state(storage, project, clock).state == CLOSED
    clock.advance(POLICY.probe_interval * (POLICY.close_after + 1))
    every = ids(take(storage, project, 10).messages)
    assert posted[0] in every and len(every) == len(posted) + len(healthy) - POLICY.close_after
    # Its lapse was judged once, when the probe gate saw it.
    assert storage.messages.get(project, "q", posted[0]).forgiven_count == 1


def test_a_probe_rejected_for_good_is_held_and_held_back(storage, project, clock):
    # A terminal reject of the probe while open: held as a retry, and held
    # back like any failed probe, so the next probe is another message.
    posted, _ = trip(storage, project, clock)
    clock.advance(5)
    probe = take(storage, project)
    assert ids(probe.messages) == [posted[0]]
    move = moves.rejected("dlq", None, "malformed")
    storage.messages.move(project, "q", [posted[0]], move, claim_id=probe.id,
                          client_id="consumer", rules=RULES)
    assert storage.messages.list(project, "dlq") == []
    clock.advance(POLICY.probe_interval)
    assert ids(take(storage, project).messages) == [posted[1]]
