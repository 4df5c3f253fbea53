"""Automatic redrive after an outage, on every driver with ``Storage.has_breaker``.

The driver's part (zq.storage.breakers): ``outage_description`` kept after
the close, ``due_redrives`` listing what a close left due. The rest is
zq.service.auto_redrive over the contract, with the manual clock: which
dead letters a close sends back, once, and that housekeeping finishes what
a crash between the close and the redrive left undone.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from zq import events
from zq.config import Limits
from zq.poison import moves
from zq.poison.breaker import CLOSED, OPEN, BreakerPolicy
from zq.poison.dead_letter import policy_from_metadata as dead_letter_policy
from zq.service.auto_redrive import AutoRedrive
from zq.storage.delivery_rules import DeliveryRules

from .helpers import CLAIM_TTL, GRACE, events_of, post

TTL = 3600
POLICY = BreakerPolicy(failure_ratio=0.5, min_failures=3, window=60, probe_interval=5,
                       close_after=2, auto_redrive_max=1)
RULES = DeliveryRules(breaker=POLICY)
METADATA = {"_breaker_failure_ratio": 0.5, "_breaker_min_failures": 3, "_breaker_window": 60,
            "_breaker_probe_interval": 5, "_breaker_close_after": 2, "_auto_redrive_max": 1,
            "_dead_letter_queue": "dlq", "_max_claim_count": 5}
OUTAGE = "db down: connection to 10.0.0.{} refused"


@pytest.fixture(autouse=True)
def _only_with_breaker(storage):
    if not storage.has_breaker:
        pytest.skip("this driver does not carry out the breaker yet (Storage.has_breaker)")


@pytest.fixture
def redrive(clock):
    return AutoRedrive(Limits(), clock)


def take(storage, project, limit=10):
    return storage.claims.create(project, "q", ttl=CLAIM_TTL, grace=GRACE, limit=limit,
                                 client_id="consumer", rules=RULES)


def retry(storage, project, message_id, claim_id, description):
    storage.messages.reject(project, "q", message_id, claim_id=claim_id, client_id="consumer",
                            description=description, retry_after=0, rules=RULES)


def dead_letter(storage, project, message_id, claim_id, description):
    """A terminal reject (moved while closed, held while open)."""
    storage.messages.move(project, "q", [message_id], moves.rejected("dlq", None, description),
                          claim_id=claim_id, client_id="consumer", rules=RULES)


def close_by_probes(storage, project, clock):
    """Two successful probes, one probe interval after the trip."""
    clock.advance(POLICY.probe_interval)
    for _ in range(POLICY.close_after):
        probe = take(storage, project, 1)
        storage.messages.delete(project, "q", probe.messages[0].id, claim_id=probe.id,
                                client_id="consumer", rules=RULES)
    read = storage.breakers.read(project, "q", POLICY, clock.now())
    assert (read.state, read.redrive_due) == (CLOSED, True)
    return read


def outage(storage, project, clock):
    """The story of the module: the ids by role; the breaker is left open.

    ``old`` failed alike long before (outside the window) and was dead
    lettered then; ``poison`` is dead lettered with its own description
    just before the trip; ``victims`` are dead lettered by the outage before
    the breaker knows it is one; the first retry reject of the rest trips
    it (4 failures of 8 outcomes, 4 distinct messages).
    """
    storage.queues.create(project, "q", METADATA)
    old, poison, *victims = post(storage, project, "q", 4, ttl=TTL)
    held = take(storage, project, 1)
    dead_letter(storage, project, old, held.id, OUTAGE.format(1))
    clock.advance(POLICY.window + 40)
    extra = post(storage, project, "q", 10, ttl=TTL)
    held = take(storage, project, 20)
    for message_id in extra[:4]:
        storage.messages.delete(project, "q", message_id, claim_id=held.id,
                                client_id="consumer", rules=RULES)
    dead_letter(storage, project, poison, held.id, "KeyError: 'customer'")
    clock.advance(1)
    for n, message_id in enumerate(victims):
        dead_letter(storage, project, message_id, held.id, OUTAGE.format(n + 2))
    assert storage.breakers.read(project, "q", POLICY, clock.now()).state == CLOSED
    clock.advance(1)
    retry(storage, project, extra[4], held.id, OUTAGE.format(7))
    tripped = storage.breakers.read(project, "q", POLICY, clock.now())
    # Every description was seen once: the most recent names the outage.
    assert (tripped.state, tripped.outage_description) == (OPEN, OUTAGE.format(7))
    retry(storage, project, extra[5], held.id, OUTAGE.format(8))
    # Held while open: not moved, so nothing to send back for it.
    dead_letter(storage, project, extra[6], held.id, OUTAGE.format(9))
    storage.claims.release(project, "q", held.id, client_id="consumer")
    assert in_queue(storage, project, "dlq") == {old, poison, *victims}
    return {"old": old, "poison": poison, "victims": victims, "extra": extra}


def in_queue(storage, project, queue):
    return {m.id for m in storage.messages.list(project, queue, limit=100, echo=True,
                                                 include_claimed=True, include_delayed=True)}


def test_the_outage_is_known_after_the_close_and_the_queue_is_listed_due(
        storage, project, clock):
    outage(storage, project, clock)
    closed = close_by_probes(storage, project, clock)
    assert closed.outage_description == OUTAGE.format(7)
    assert (project, "q") in storage.breakers.due_redrives()
    storage.breakers.redrive_done(project, "q", closed.closed_at)
    assert (project, "q") not in storage.breakers.due_redrives()
    still = storage.breakers.read(project, "q", POLICY, clock.now())
    assert (still.redrive_due, still.outage_description) == (False, OUTAGE.format(7))


def test_a_close_sends_back_what_the_outage_dead_lettered_and_nothing_else(
        storage, project, clock, redrive):
    roles = outage(storage, project, clock)
    close_by_probes(storage, project, clock)
    assert redrive.run(storage, project, "q", METADATA) == 2
    assert in_queue(storage, project, "dlq") == {roles["old"], roles["poison"]}
    for message_id in roles["victims"]:
        back = storage.messages.get(project, "q", message_id)
        assert (back.claim_count, back.forgiven_count, back.redrive_count) == (0, 0, 1)
        entry = back.history[-1]
        assert (entry[moves.QUEUE], entry[moves.REASON]) == ("dlq", moves.REASON_AUTO_REDRIVEN)
    redriven = [e for e in events_of(storage, project, events.REDRIVEN)]
    assert sorted(e.message_id for e in redriven) == sorted(roles["victims"])
    assert {(e.queue, e.detail["to"], e.detail["reason"]) for e in redriven} == {
        ("dlq", "q", moves.REASON_AUTO_REDRIVEN)}
    read = storage.breakers.read(project, "q", POLICY, clock.now())
    assert not read.redrive_due
    assert (project, "q") not in storage.breakers.due_redrives()
    # Done once: a second run finds nothing due.
    assert redrive.run(storage, project, "q", METADATA) == 0


def test_housekeeping_finishes_a_redrive_a_crash_left_due(storage, project, clock, redrive):
    roles = outage(storage, project, clock)
    close_by_probes(storage, project, clock)
    # The process that closed it died before redriving: housekeeping, later.
    clock.advance(30)
    assert redrive.run_due(storage) >= 2
    assert in_queue(storage, project, "dlq") == {roles["old"], roles["poison"]}
    assert (project, "q") not in storage.breakers.due_redrives()
    assert redrive.run_due(storage) == 0


def test_a_message_auto_redriven_once_stays_after_the_next_outage(
        storage, project, clock, redrive):
    roles = outage(storage, project, clock)
    close_by_probes(storage, project, clock)
    redrive.run(storage, project, "q", METADATA)
    victim = roles["victims"][0]
    # It fails again alike at once: dead lettered, then another outage trips and closes.
    clock.advance(1)
    held = take(storage, project, 20)
    assert victim in {m.id for m in held.messages}
    dead_letter(storage, project, victim, held.id, OUTAGE.format(40))
    others = [m.id for m in held.messages if m.id != victim]
    for n, message_id in enumerate(others[:3]):
        retry(storage, project, message_id, held.id, OUTAGE.format(n + 41))
    assert storage.breakers.read(project, "q", POLICY, clock.now()).state == OPEN
    storage.claims.release(project, "q", held.id, client_id="consumer")
    close_by_probes(storage, project, clock)
    # Generation 1 of _auto_redrive_max 1: left in the dead letter queue.
    assert redrive.run(storage, project, "q", METADATA) == 0
    assert victim in in_queue(storage, project, "dlq")
    assert not storage.breakers.read(project, "q", POLICY, clock.now()).redrive_due


def test_auto_redrive_max_0_turns_it_off(storage, project, clock, redrive):
    roles = outage(storage, project, clock)
    storage.breakers.force(project, "q", CLOSED,
                           BreakerPolicy(failure_ratio=0.5, min_failures=3, auto_redrive_max=0),
                           clock.now())
    off = {**METADATA, "_auto_redrive_max": 0}
    assert redrive.run(storage, project, "q", off) == 0
    assert set(roles["victims"]) <= in_queue(storage, project, "dlq")


def test_a_forced_close_redrives_like_a_close_by_probes(storage, project, clock, redrive):
    roles = outage(storage, project, clock)
    clock.advance(2)
    forced = storage.breakers.force(project, "q", CLOSED, POLICY, clock.now())
    assert (forced.redrive_due, forced.outage_description) == (True, OUTAGE.format(7))
    assert redrive.run(storage, project, "q", METADATA) == 2
    assert in_queue(storage, project, "dlq") == {roles["old"], roles["poison"]}


def test_after_success_reads_a_closed_breaker_at_most_once_a_second(
        storage, project, clock, redrive):
    roles = outage(storage, project, clock)
    # Seen open, then half-open: every success reads it, so the one that
    # closes it redrives at once.
    clock.advance(POLICY.probe_interval)
    moved = []
    for _ in range(POLICY.close_after):
        probe = take(storage, project, 1)
        storage.messages.delete(project, "q", probe.messages[0].id, claim_id=probe.id,
                                client_id="consumer", rules=RULES)
        moved.append(redrive.after_success(storage, project, "q", METADATA))
    assert moved == [0, 2]
    assert set(roles["victims"]).isdisjoint(in_queue(storage, project, "dlq"))
    # Seen closed this very second: trusted, not read again, so a close
    # within that second (forced here) waits for the next read.
    storage.breakers.force(project, "q", OPEN, POLICY, clock.now())
    storage.breakers.force(project, "q", CLOSED, POLICY, clock.now())
    redrive.after_success(storage, project, "q", METADATA)
    assert storage.breakers.read(project, "q", POLICY, clock.now()).redrive_due
    clock.advance(1)
    redrive.after_success(storage, project, "q", METADATA)
    assert not storage.breakers.read(project, "q", POLICY, clock.now()).redrive_due


SHORT = {**METADATA, "_max_claim_count": 2}
BACKOFF = 600  # longer than the probes take: no claim reaches the exhausted ones


def exhausted_before_the_trip(storage, project, clock):
    """Two messages exhausted just before the trip, no claim has moved yet.

    ``victim`` failed twice with the outage, ``poison`` twice with its own
    description; both wait out a long backoff, so the probes pass them by.
    Three more outage failures trip the breaker; the probes close it.
    """
    storage.queues.create(project, "q", SHORT)
    victim, poison, *_ = post(storage, project, "q", 8, ttl=TTL)
    for retry_after in (0, BACKOFF):
        held = take(storage, project, 2)
        assert {m.id for m in held.messages} == {victim, poison}
        for message_id, description in ((victim, OUTAGE.format(1)), (poison, "KeyError: 'sku'")):
            storage.messages.reject(project, "q", message_id, claim_id=held.id,
                                    client_id="consumer", description=description,
                                    retry_after=retry_after, rules=RULES)
    held = take(storage, project, 3)
    for message in held.messages:
        retry(storage, project, message.id, held.id, OUTAGE.format(1))
    tripped = storage.breakers.read(project, "q", POLICY, clock.now())
    assert (tripped.state, tripped.outage_description) == (OPEN, OUTAGE.format(1))
    close_by_probes(storage, project, clock)
    for message_id in (victim, poison):
        waiting = storage.messages.get(project, "q", message_id)
        assert (waiting.queue, waiting.claim_count) == ("q", 2)  # exhausted, not moved
    return victim, poison


def test_what_the_outage_exhausted_but_no_claim_moved_is_sent_back_too(
        storage, project, clock, redrive):
    victim, poison = exhausted_before_the_trip(storage, project, clock)
    assert redrive.run(storage, project, "q", SHORT) == 1
    back = storage.messages.get(project, "q", victim)
    assert (back.claim_count, back.redrive_count) == (0, 1)
    assert [(e[moves.QUEUE], e[moves.REASON]) for e in back.history[-2:]] == [
        ("q", moves.REASON_MAX_CLAIM_COUNT), ("dlq", moves.REASON_AUTO_REDRIVEN)]
    assert [e.kind for e in events_of(storage, project)
            if e.message_id == victim][-2:] == [events.DEAD_LETTERED, events.REDRIVEN]
    # The poison is left to the claim that reaches it: not the outage's.
    assert storage.messages.get(project, "q", poison).claim_count == 2
    assert in_queue(storage, project, "dlq") == set()


def test_a_claim_that_dead_letters_one_after_the_close_does_not_keep_it(
        storage, project, clock, redrive):
    victim, poison = exhausted_before_the_trip(storage, project, clock)
    # Consumers claim as soon as the breaker closes, before the redrive runs.
    clock.advance(BACKOFF)
    storage.claims.create(project, "q", ttl=CLAIM_TTL, grace=GRACE, limit=10,
                          client_id="consumer",
                          rules=replace(RULES, dead_letter=dead_letter_policy(SHORT)))
    assert in_queue(storage, project, "dlq") == {victim, poison}
    clock.advance(1)
    assert redrive.run(storage, project, "q", SHORT) == 1
    assert in_queue(storage, project, "dlq") == {poison}
    assert storage.messages.get(project, "q", victim).redrive_count == 1


def test_a_request_walks_a_long_queue_for_its_budget_and_leaves_the_rest_to_housekeeping(
        storage, project, clock, redrive, monkeypatch):
    from zq.service import auto_redrive as carried_out

    monkeypatch.setattr(carried_out, "PAGE", 1)  # every message a page: the queue is "long"
    victim, _ = exhausted_before_the_trip(storage, project, clock)
    # The manual clock stands still, so a budget of 0 ends the walk after its first page.
    assert redrive.run(storage, project, "q", SHORT, budget=0) == 1  # the victim, first in line
    assert storage.messages.get(project, "q", victim).redrive_count == 1
    assert (project, "q") in storage.breakers.due_redrives()  # still due
    assert redrive.after_success(storage, project, "q", SHORT) == 0
    assert (project, "q") in storage.breakers.due_redrives()  # not walked again by a request
    assert redrive.run_due(storage) == 0  # housekeeping walks it all: nothing else was the outage's
    assert (project, "q") not in storage.breakers.due_redrives()
