"""The breaker's single-document steps on MongoDB (zq.storage.mongo.breakers).

What the contract suite cannot see: that each state change is one
conditional update of the breaker document (two workers deciding the same
trip or probe at once make it once), that a discovered lapse is consumed
by the one update that takes its message, and what a crash between the
message's update and the breaker's leaves (one outcome uncounted, never a
message lost or doubled). Threads interleave between single operations on
mongomock (see test_races.py); with ZQ_TEST_MONGO_URL on a real server.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.drivers.mongo.helpers import bodies
from zq import events
from zq.poison import moves
from zq.poison.breaker import CLOSED, OPEN, BreakerPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.mongo import breakers
from zq.storage.records import ConsumerEntry

THREADS = 6
POLICY = BreakerPolicy(failure_ratio=0.5, min_failures=2, window=60, probe_interval=5,
                       close_after=2)
RULES = DeliveryRules(breaker=POLICY)


def _parallel(fn, n=THREADS):
    with ThreadPoolExecutor(n) as pool:
        return [f.result() for f in [pool.submit(fn, i) for i in range(n)]]


def _breaker_events(storage, project):
    return [e.detail for e in storage.events.read(limit=10_000)
            if e.project == project and e.kind == events.BREAKER]


def _claim(storage, project, limit=10, *, rules=RULES, client_id="c", ttl=60):
    return storage.claims.create(project, "q", ttl=ttl, grace=60, limit=limit,
                                 client_id=client_id, rules=rules)


def _all_read_the_breaker_first(monkeypatch, nth: int) -> None:
    """Hold each thread at its ``nth`` read of the breaker document until every
    thread got there: all decide on the same state, then all write."""
    barrier = threading.Barrier(THREADS, timeout=10)
    seen = threading.local()
    read = breakers.read_doc

    def held_read(*args, **kwargs):
        doc = read(*args, **kwargs)
        seen.calls = getattr(seen, "calls", 0) + 1
        if seen.calls == nth:
            barrier.wait()
        return doc

    monkeypatch.setattr(breakers, "read_doc", held_read)


def test_concurrent_failures_trip_it_once(mongo_factory, clock, project, monkeypatch):
    stores = [mongo_factory(clock) for _ in range(THREADS)]
    ids = stores[0].messages.post(project, "q", bodies(THREADS), client_id="c")
    held = _claim(stores[0], project)
    # A reject reads the breaker twice: for its own failure, then after
    # recording it. Every thread records before any decides on a trip.
    _all_read_the_breaker_first(monkeypatch, nth=2)

    def fail(i):
        stores[i].messages.reject(project, "q", ids[i], claim_id=held.id, client_id="c",
                                  description="db down", retry_after=0, rules=RULES)

    _parallel(fail)
    # Every thread saw the threshold crossed on a closed breaker; the
    # conditional update on ``state: closed`` lets exactly one of them trip it.
    opened = [d for d in _breaker_events(stores[0], project) if d["state"] == OPEN]
    assert len(opened) == 1
    assert stores[0].breakers.read(project, "q", POLICY, clock.now()).state == OPEN


def test_concurrent_claims_at_an_open_breaker_take_one_probe(mongo_factory, clock, project,
                                                             monkeypatch):
    stores = [mongo_factory(clock) for _ in range(THREADS)]
    stores[0].messages.post(project, "q", bodies(10), client_id="c")
    stores[0].breakers.force(project, "q", OPEN, POLICY, clock.now())
    clock.advance(POLICY.probe_interval)
    # Every claim reads "open, probe due, none outstanding" before any reserves.
    _all_read_the_breaker_first(monkeypatch, nth=1)

    results = _parallel(lambda i: _claim(stores[i], project))
    monkeypatch.undo()
    probes = [claim for claim in results if claim is not None]
    assert [len(claim.messages) for claim in probes] == [1]
    doc = breakers.read_doc(stores[0]._ctx, project, "q")
    assert doc["probe_claim"] == probes[0].id


def test_a_lapse_is_consumed_by_the_one_update_that_takes_it(mongo_factory, clock, project):
    stores = [mongo_factory(clock) for _ in range(THREADS)]
    rules = DeliveryRules(breaker=POLICY, blame_split=True)
    (message_id,) = stores[0].messages.post(project, "q", bodies(1), client_id="c")
    _claim(stores[0], project, rules=rules, client_id="gone")
    clock.advance(60)

    def take(i):
        claim = _claim(stores[i], project, rules=DeliveryRules(
            breaker=POLICY, blame_split=True, consumer=ConsumerEntry(f"c{i}", 3600)),
            client_id=f"c{i}")
        return None if claim is None else claim.id

    assert len([c for c in _parallel(take) if c is not None]) == 1
    record = stores[0].messages.get(project, "q", message_id)
    lapses = [e for e in record.history if e.get("charged_to")]
    assert (record.claim_count, record.forgiven_count, len(lapses)) == (2, 1, 1)
    failures = list(stores[0]._ctx.breaker_outcomes.find({"project": project, "failed": True}))
    assert [f["message_id"] for f in failures] == [message_id]


def test_a_crash_between_the_message_and_the_breaker_miscounts_one_outcome(
        storage, project, clock, monkeypatch):
    ids = storage.messages.post(project, "q", bodies(3), client_id="c")
    held = _claim(storage, project)

    def crash(*args, **kwargs):
        raise ConnectionError("the process died here")

    monkeypatch.setattr(breakers, "record", crash)
    with pytest.raises(ConnectionError):
        storage.messages.reject(project, "q", ids[0], claim_id=held.id, client_id="c",
                                description="db down", retry_after=0, rules=RULES)
    monkeypatch.undo()
    # Without transactions the message's own update stands: given back once,
    # its description kept; only the breaker's failure was not recorded.
    record = storage.messages.get(project, "q", ids[0])
    assert (record.claim_id, record.claim_count, record.last_failure) == (None, 1, "db down")
    assert storage._ctx.breaker_outcomes.count_documents({"project": project}) == 0
    assert sorted(m.id for m in storage.messages.list(project, "q", include_claimed=True)) \
        == sorted(ids)
    again = _claim(storage, project)
    assert [m.id for m in again.messages] == [ids[0]]


def test_a_released_probe_ends_without_a_failure(storage, project, clock):
    storage.messages.post(project, "q", bodies(3), client_id="c")
    storage.breakers.force(project, "q", OPEN, POLICY, clock.now())
    clock.advance(POLICY.probe_interval)
    probe = _claim(storage, project)
    storage.claims.release(project, "q", probe.id, client_id="c")
    assert _claim(storage, project) is None  # the next probe is an interval on
    clock.advance(POLICY.probe_interval)
    assert len(_claim(storage, project).messages) == 1
    assert [d["state"] for d in _breaker_events(storage, project)] == [OPEN]


def test_a_renewed_probe_stays_outstanding(storage, project, clock):
    storage.messages.post(project, "q", bodies(3), client_id="c")
    storage.breakers.force(project, "q", OPEN, POLICY, clock.now())
    clock.advance(POLICY.probe_interval)
    probe = _claim(storage, project, ttl=60)
    clock.advance(50)
    storage.claims.renew(project, "q", probe.id, ttl=60, grace=60, client_id="c")
    clock.advance(30)  # past the probe claim's first expiry, within the renewed one
    assert _claim(storage, project) is None
    assert storage.breakers.read(project, "q", POLICY, clock.now()).state == OPEN
    assert breakers.read_doc(storage._ctx, project, "q")["probe_claim"] == probe.id


def test_outcomes_are_trimmed_by_the_steps_that_write_them(storage, project, clock):
    ids = storage.messages.post(project, "q", bodies(3), client_id="c")
    held = _claim(storage, project, ttl=300)
    storage.messages.reject(project, "q", ids[0], claim_id=held.id, client_id="c",
                            description="x", retry_after=0, rules=RULES)
    clock.advance(POLICY.window + 1)
    storage.messages.delete(project, "q", ids[1], claim_id=held.id, client_id="c",
                            rules=RULES)
    left = list(storage._ctx.breaker_outcomes.find({"project": project}))
    assert [(o["failed"], o["time"]) for o in left] == [(False, clock.now())]


def test_a_close_clears_the_window_in_the_same_update(storage, project, clock):
    ids = storage.messages.post(project, "q", bodies(3), client_id="c")
    held = _claim(storage, project)
    for message_id in ids[:2]:
        storage.messages.reject(project, "q", message_id, claim_id=held.id, client_id="c",
                                description="x", retry_after=0, rules=RULES)
    closed = storage.breakers.force(project, "q", CLOSED, POLICY, clock.now())
    doc = breakers.read_doc(storage._ctx, project, "q")
    assert (doc["state"], doc["window_from"], doc["closed_at"]) == (
        CLOSED, closed.closed_at, closed.closed_at)
    # The old outcomes no longer count, even those of the close's own instant.
    assert storage.breakers.read(project, "q", POLICY, clock.now()).description is None
    assert storage._ctx.breaker_outcomes.count_documents({"project": project}) == 0
    clock.advance(1)
    storage.messages.reject(project, "q", ids[2], claim_id=held.id, client_id="c",
                            description="y", retry_after=0, rules=RULES)
    assert storage.breakers.read(project, "q", POLICY, clock.now()).description == "y"


class _Transaction:
    """A stand-in session: with_transaction runs the callback and marks it running."""

    def __init__(self) -> None:
        self.running = False

    def __enter__(self) -> _Transaction:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def with_transaction(self, callback):
        self.running = True
        try:
            return callback(self)
        finally:
            self.running = False


class _SessionCheckingDatabase:
    """Notes every collection call made while a transaction runs, and whether it
    carried that transaction's session; hands mongomock the call without it."""

    def __init__(self, inner, transaction: _Transaction, calls: list) -> None:
        self._inner, self._transaction, self._calls = inner, transaction, calls

    def __getitem__(self, name):
        collection = self._inner[name]
        outer = self

        class Checked:
            def __getattr__(self, attr):
                method = getattr(collection, attr)

                def call(*args, session=None, **kwargs):
                    if outer._transaction.running:
                        outer._calls.append((name, attr, session is outer._transaction))
                    return method(*args, **kwargs)

                return call

        return Checked()

    def __getattr__(self, attr):
        return getattr(self._inner, attr)


def test_with_transactions_every_breaker_write_joins_the_steps_transaction(storage, project,
                                                                           clock):
    """On a replica set the message, outcomes, breaker document, consumer log and
    events of one step are one transaction: every call inside it carries its session."""
    transaction = _Transaction()
    calls: list = []
    ctx = storage._ctx
    checked = _SessionCheckingDatabase(ctx.database, transaction, calls)
    object.__setattr__(ctx, "database", checked)
    ctx.units._database = checked
    ctx.units._client = type("Client", (), {"start_session": lambda self: transaction})()
    ctx.units.transactions = True
    rules = DeliveryRules(breaker=POLICY, blame_split=True,
                          consumer=ConsumerEntry("c", keep_for=3600))
    ids = storage.messages.post(project, "q", bodies(4), client_id="c")
    _claim(storage, project, 1, rules=rules, client_id="c")
    clock.advance(60)
    held = _claim(storage, project, rules=rules, client_id="c")  # a lapse, blamed
    storage.messages.reject(project, "q", ids[1], claim_id=held.id, client_id="c",
                            description="down", retry_after=0, rules=rules)  # trips it
    storage.messages.move(project, "q", ids[2:3], moves.rejected("dlq", None, "down"),
                          claim_id=held.id, client_id="c", rules=rules)  # held
    storage.messages.delete(project, "q", ids[3], claim_id=held.id, client_id="c",
                            rules=rules)
    clock.advance(POLICY.probe_interval)
    probe = _claim(storage, project, rules=rules, client_id="c")
    storage.messages.delete(project, "q", probe.messages[0].id, claim_id=probe.id,
                            client_id="c", rules=rules)
    storage.breakers.force(project, "q", CLOSED, POLICY, clock.now())
    touched = {name for name, _method, _joined in calls}
    assert touched >= {"messages", "claims", "breakers", "breaker_outcomes", "consumers",
                       "events"}
    assert [call for call in calls if not call[2]] == []
