"""ConsumerLog: the consumer log every driver keeps (zq.poison.consumers reads it)."""

from __future__ import annotations

import uuid

import pytest

from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import ConsumerClaim, ConsumerEntry

from .helpers import claim, post

NOW = 1_700_000_000.25


@pytest.fixture
def cid():
    """Claim ids are unique across a backend (uuids), as the drivers make them."""
    made: dict[str, str] = {}

    def named(name: str) -> str:
        return made.setdefault(name, uuid.uuid4().hex)
    return named


def record(storage, project, claim_id, *, client="c1", ttl=60, claimed=NOW, queue="q",
           forget_before=0.0):
    storage.consumers.record(project, queue, ConsumerClaim(
        client_id=client, claim_id=claim_id, ttl=ttl, claimed=claimed,
        expires=claimed + ttl), forget_before=forget_before)


def by_id(storage, project, queue="q", *, after=0.0, client_id=None):
    found = storage.consumers.claims(project, queue, expires_after=after, client_id=client_id)
    return {c.claim_id: c for c in found}


def test_a_recorded_claim_reads_back_exactly(storage, project, cid):
    record(storage, project, cid("a"), client="client|with:odd|bytes", ttl=90,
           claimed=NOW + 0.123456789)
    assert by_id(storage, project) == {cid("a"): ConsumerClaim(
        client_id="client|with:odd|bytes", claim_id=cid("a"), ttl=90,
        claimed=NOW + 0.123456789, expires=NOW + 0.123456789 + 90, settled=None)}


def test_reads_filter_by_expiry_and_client(storage, project, cid):
    record(storage, project, cid("a1"), client="c1", claimed=NOW)
    record(storage, project, cid("a2"), client="c2", claimed=NOW + 100)
    assert set(by_id(storage, project, after=NOW + 61)) == {cid("a2")}
    assert set(by_id(storage, project, after=NOW + 60)) == {cid("a1"), cid("a2")}
    assert set(by_id(storage, project, client_id="c1")) == {cid("a1")}


def test_projects_and_queues_are_separate(storage, project, cid):
    record(storage, project, cid("a1"), queue="q")
    record(storage, project, cid("a2"), queue="other")
    record(storage, project + "x", cid("a3"), queue="q")
    assert set(by_id(storage, project, "q")) == {cid("a1")}
    assert set(by_id(storage, project, "other")) == {cid("a2")}
    # A write naming another queue's claim changes nothing.
    storage.consumers.settle(project, "q", cid("a2"), now=NOW, ended=True)
    assert by_id(storage, project, "other")[cid("a2")].settled is None


def test_record_forgets_the_queue_records_that_expired_before_the_bound(storage, project, cid):
    record(storage, project, cid("old"), claimed=NOW)
    record(storage, project, cid("kept"), claimed=NOW + 30)
    record(storage, project, cid("elsewhere"), claimed=NOW, queue="other")
    record(storage, project, cid("new"), claimed=NOW + 200, forget_before=NOW + 61)
    assert set(by_id(storage, project)) == {cid("kept"), cid("new")}
    assert set(by_id(storage, project, "other")) == {cid("elsewhere")}


def test_settle_keeps_the_first_time(storage, project, cid):
    record(storage, project, cid("a1"))
    storage.consumers.settle(project, "q", cid("a1"), now=NOW + 5, ended=False)
    storage.consumers.settle(project, "q", cid("a1"), now=NOW + 9, ended=False)
    found = by_id(storage, project)[cid("a1")]
    assert (found.settled, found.expires) == (NOW + 5, NOW + 60)


def test_a_release_ends_the_claim(storage, project, cid):
    record(storage, project, cid("a1"))
    storage.consumers.settle(project, "q", cid("a1"), now=NOW + 5, ended=True)
    found = by_id(storage, project)[cid("a1")]
    assert (found.settled, found.expires) == (NOW + 5, NOW + 5)
    # A release after expiry keeps the expiry (and the first settle).
    record(storage, project, cid("a2"))
    storage.consumers.settle(project, "q", cid("a2"), now=NOW + 70, ended=True)
    found = by_id(storage, project)[cid("a2")]
    assert (found.settled, found.expires) == (NOW + 70, NOW + 60)


def test_renew_moves_a_live_claim_and_settles_an_expired_one(storage, project, cid):
    record(storage, project, cid("live"))
    record(storage, project, cid("gone"))
    storage.consumers.extend(project, "q", cid("live"), ttl=120, now=NOW + 30)
    live = by_id(storage, project)[cid("live")]
    assert (live.expires, live.ttl, live.settled) == (NOW + 150, 120, None)
    storage.consumers.extend(project, "q", cid("gone"), ttl=120, now=NOW + 61)
    gone = by_id(storage, project)[cid("gone")]
    assert (gone.expires, gone.ttl, gone.settled) == (NOW + 60, 60, NOW + 61)
    # The expiry index follows a renew: a read past the old expiry sees it.
    assert set(by_id(storage, project, after=NOW + 100)) == {cid("live")}


def test_unknown_claims_change_nothing(storage, project, cid):
    storage.consumers.settle(project, "q", cid("nope"), now=NOW, ended=True)
    storage.consumers.extend(project, "q", cid("nope"), ttl=60, now=NOW)
    assert by_id(storage, project) == {}


def test_forget_drops_only_that_queues_records(storage, project, cid):
    record(storage, project, cid("a1"), queue="q")
    record(storage, project, cid("a2"), queue="other")
    storage.consumers.forget(project, "q")
    assert by_id(storage, project, "q") == {}
    assert set(by_id(storage, project, "other")) == {cid("a2")}
    # A new record after forgetting is kept as any other.
    record(storage, project, cid("a3"), queue="q")
    assert set(by_id(storage, project, "q")) == {cid("a3")}


# -- a claim's own record (ClaimController.create with ``consumer``) ----------

def claim_with_record(storage, project, queue="q", *, ttl=60, client="c1", keep_for=3600.0,
                      dead_letter=None, versioned=False, limit=5):
    entry = ConsumerEntry(client_id=client, keep_for=keep_for)
    version = storage.queues.read_metadata(project, queue).version if versioned else None
    rules = DeliveryRules(dead_letter=dead_letter, metadata_version=version, consumer=entry)
    return storage.claims.create(project, queue, ttl=ttl, grace=30, limit=limit,
                                 client_id=client, rules=rules)


@pytest.mark.parametrize("versioned", [False, True])
def test_a_claim_writes_its_own_record(storage, project, clock, versioned):
    if versioned and not storage.checks_metadata_version:
        pytest.skip("driver without Storage.checks_metadata_version")
    post(storage, project, "q", 3)
    made = claim_with_record(storage, project, ttl=90, client="c|odd", versioned=versioned)
    assert made is not None
    assert by_id(storage, project) == {made.id: ConsumerClaim(
        client_id="c|odd", claim_id=made.id, ttl=90, claimed=made.created,
        expires=made.expires, settled=None)}
    assert made.created == pytest.approx(clock.now())
    # The record it wrote takes settles like any other.
    storage.consumers.settle(project, "q", made.id, now=clock.now() + 1, ended=False)
    assert by_id(storage, project)[made.id].settled == pytest.approx(clock.now() + 1)


def test_a_claim_that_delivers_nothing_writes_no_record(storage, project):
    storage.queues.create(project, "q", {})
    assert claim_with_record(storage, project) is None
    assert by_id(storage, project) == {}


def test_a_claim_without_consumer_writes_no_record(storage, project):
    post(storage, project, "q", 1)
    assert claim(storage, project, "q", client_id="c1") is not None
    assert by_id(storage, project) == {}


def test_a_claim_forgets_the_queue_records_that_expired_long_ago(storage, project, clock,
                                                                 cid):
    now = clock.now()
    record(storage, project, cid("old"), claimed=now - 500, ttl=60)   # expired now - 440
    record(storage, project, cid("kept"), claimed=now - 300, ttl=60)  # expired now - 240
    record(storage, project, cid("other"), claimed=now - 500, ttl=60, queue="other")
    post(storage, project, "q", 1)
    made = claim_with_record(storage, project, keep_for=400.0)
    assert set(by_id(storage, project)) == {cid("kept"), made.id}
    assert set(by_id(storage, project, "other")) == {cid("other")}


def test_a_claim_that_moves_a_message_still_records_its_delivery(storage, project, clock):
    # The dead letter walk (the general claim path on every driver) also
    # writes the record in its step.
    post(storage, project, "q", 2)
    policy = DeadLetterPolicy(max_claim_count=5, queue="dlq")
    made = claim_with_record(storage, project, dead_letter=policy)
    assert made is not None and len(made.messages) == 2
    assert set(by_id(storage, project)) == {made.id}


# -- a delete's own settle (MessageController.delete with ``settle_claim``) ----

def test_a_delete_settles_its_claim_in_its_own_step(storage, project, clock):
    post(storage, project, "q", 2)
    made = claim_with_record(storage, project)
    first, second = (m.id for m in made.messages)
    clock.advance(5)
    storage.messages.delete(project, "q", first, claim_id=made.id, client_id="c1",
                            settle_claim=True)
    assert by_id(storage, project)[made.id].settled == pytest.approx(clock.now())
    settled = clock.now()
    clock.advance(5)
    # The first settle is kept.
    storage.messages.delete(project, "q", second, claim_id=made.id, client_id="c1",
                            settle_claim=True)
    assert by_id(storage, project)[made.id].settled == pytest.approx(settled)
    assert by_id(storage, project)[made.id].expires == pytest.approx(made.expires)


def test_a_batch_delete_settles_the_claims_it_names_in_its_own_step(storage, project, clock):
    post(storage, project, "q", 4)
    one = claim_with_record(storage, project, limit=2)
    other = claim_with_record(storage, project, limit=2)
    clock.advance(5)
    deleted = storage.messages.delete_many(
        project, "q", [m.id for m in one.messages], claim_ids=[one.id, other.id],
        client_id="c1", settle_claims=True)
    assert sorted(deleted) == sorted(m.id for m in one.messages)
    records = by_id(storage, project)
    # Both named claims are settled, the one whose messages stay held too.
    assert records[one.id].settled == pytest.approx(clock.now())
    assert records[other.id].settled == pytest.approx(clock.now())
    assert records[other.id].expires == pytest.approx(other.expires)  # not ended
    settled = clock.now()
    clock.advance(5)
    storage.messages.delete_many(project, "q", [m.id for m in other.messages],
                                 claim_ids=[other.id], client_id="c1", settle_claims=True)
    assert by_id(storage, project)[other.id].settled == pytest.approx(settled)  # kept


def test_a_batch_delete_without_settle_claims_leaves_the_records(storage, project):
    post(storage, project, "q", 2)
    made = claim_with_record(storage, project)
    storage.messages.delete_many(project, "q", [m.id for m in made.messages],
                                 claim_ids=[made.id], client_id="c1")
    assert by_id(storage, project)[made.id].settled is None


def test_a_delete_without_settle_claim_leaves_the_record(storage, project):
    post(storage, project, "q", 1)
    made = claim_with_record(storage, project)
    storage.messages.delete(project, "q", made.messages[0].id, claim_id=made.id,
                            client_id="c1")
    assert by_id(storage, project)[made.id].settled is None
