"""zq.poison.consumers: what counts as live, lapsed and suspected, and the settle cache."""

from __future__ import annotations

import pytest

from zq.poison import consumers
from zq.storage.consumer_log import ConsumerLog
from zq.storage.records import ConsumerClaim

NOW = 1_700_000_000.0


def claim(client="c1", *, claimed=NOW - 100, ttl=60, expires=None, settled=None,
          claim_id="a" * 32) -> ConsumerClaim:
    return ConsumerClaim(client_id=client, claim_id=claim_id, ttl=ttl, claimed=claimed,
                         expires=claimed + ttl if expires is None else expires,
                         settled=settled)


@pytest.mark.parametrize(("settled", "lapsed", "suspected"), [
    (None, True, True),  # expired untouched
    (NOW - 90, False, False),  # a delete before expiry
    (NOW - 30, True, False),  # named late: alive, but the lapse happened
])
def test_lapsed_and_suspicion(settled, lapsed, suspected):
    made = claim(settled=settled)  # expired at NOW - 40
    assert consumers.lapsed(made, NOW) is lapsed
    assert consumers.suspicion(made, NOW) is suspected


def test_suspicion_lasts_one_claim_ttl_after_the_lapse():
    made = claim()  # expired at NOW - 40, ttl 60
    assert consumers.suspicion(made, NOW + 19.9)
    assert not consumers.suspicion(made, NOW + 20)


def test_a_live_claim_is_neither_lapsed_nor_suspected():
    made = claim(claimed=NOW - 10)
    assert not consumers.lapsed(made, NOW) and not consumers.suspicion(made, NOW)


def test_summarize_groups_per_client_newest_first_within_the_window():
    shown = consumers.summarize([
        claim("old", claimed=NOW - 4000, claim_id="1" * 32),
        claim("c1", claimed=NOW - 100, claim_id="2" * 32),
        claim("c1", claimed=NOW - 10, claim_id="3" * 32),
        claim("c2", claimed=NOW - 5, settled=NOW - 4, claim_id="4" * 32),
    ], NOW, suspecting=True)
    assert [c.document() for c in shown] == [
        {"client_id": "c2", "last_claim": NOW - 5, "live_claims": 1, "lapsed_claims": 0,
         "suspected": False},
        {"client_id": "c1", "last_claim": NOW - 10, "live_claims": 1, "lapsed_claims": 1,
         "suspected": True},
    ]
    assert not any(c.suspected for c in consumers.summarize(
        [claim("c1")], NOW, suspecting=False))


class CountingLog(ConsumerLog):
    def __init__(self) -> None:
        self.settles: list[tuple[str, bool]] = []

    def record(self, project, queue, claim, *, forget_before):
        raise AssertionError("not used")

    def settle(self, project, queue, claim_id, *, now, ended):
        self.settles.append((claim_id, ended))

    def extend(self, project, queue, claim_id, *, ttl, now):
        raise AssertionError("not used")

    def forget(self, project, queue):
        raise AssertionError("not used")

    def claims(self, project, queue, *, expires_after, client_id=None):
        return []


def test_a_process_settles_a_claim_once_but_always_records_a_release():
    rule, log = consumers.ConsumerRule(43200), CountingLog()
    for _ in range(10):  # the deletes of a batch
        rule.settled(log, "p", "q", "a" * 32, NOW)
    rule.settled(log, "p", "q", "a" * 32, NOW, ended=True)
    rule.settled(log, "p", "other", "a" * 32, NOW)
    rule.settled(log, "p", "q", "not an id!", NOW)
    rule.settled(log, "p", "q", None, NOW)
    assert log.settles == [("a" * 32, False), ("a" * 32, True), ("a" * 32, False)]


def test_the_check_needs_the_setting_and_a_client():
    rule = consumers.ConsumerRule(43200)

    class Lapsed(CountingLog):
        def claims(self, project, queue, *, expires_after, client_id=None):
            return [claim(client_id or "c1")]

    rule.check(Lapsed(), "p", "q", "c1", {}, NOW)
    rule.check(Lapsed(), "p", "q", None, {"_suspect_lapsed_consumers": True}, NOW)
    with pytest.raises(consumers.Suspected) as refused:
        rule.check(Lapsed(), "p", "q", "c1", {"_suspect_lapsed_consumers": True}, NOW)
    assert refused.value.lapsed_claim_id == "a" * 32
