"""Which breaker changes are news (zq.poison.breaker_alerts), and how the state gauge adds up."""

from __future__ import annotations

import pytest

from zq import events
from zq.metrics.gauges import QueueReading
from zq.poison import breaker_alerts
from zq.poison.breaker import CLOSED, HALF_OPEN, OPEN


def detail(state: str, previous: str, *, forced: bool = False) -> dict:
    return events.breaker_detail(state, previous, "db down", 10, 1, forced=forced)


@pytest.mark.parametrize(("state", "previous", "alert"), [
    (OPEN, CLOSED, breaker_alerts.TRIPPED),  # a trip
    (HALF_OPEN, CLOSED, breaker_alerts.TRIPPED),  # never seen, but it left closed
    (CLOSED, OPEN, breaker_alerts.CLOSED_AGAIN),  # forced closed while open
    (CLOSED, HALF_OPEN, breaker_alerts.CLOSED_AGAIN),  # enough good probes
    (HALF_OPEN, OPEN, None),  # a good probe: the breaker at work
    (OPEN, HALF_OPEN, None),  # a failed probe
    (OPEN, OPEN, None),  # forced into the state it was in
])
def test_only_leaving_or_reaching_closed_is_news(state: str, previous: str,
                                                 alert: str | None) -> None:
    assert breaker_alerts.alert_of(detail(state, previous)) == alert
    assert breaker_alerts.alert_of(detail(state, previous, forced=True)) == alert


def test_a_trip_is_an_open_by_failures_not_by_hand() -> None:
    assert breaker_alerts.is_trip(detail(OPEN, CLOSED))
    assert not breaker_alerts.is_trip(detail(OPEN, CLOSED, forced=True))
    assert not breaker_alerts.is_trip(detail(OPEN, HALF_OPEN))
    assert not breaker_alerts.is_trip(detail(CLOSED, OPEN))


def test_same_named_queues_of_several_projects_add_up_per_state() -> None:
    one = QueueReading(breaker={CLOSED: 0, OPEN: 1, HALF_OPEN: 0})
    one.merge(QueueReading(breaker={CLOSED: 1, OPEN: 0, HALF_OPEN: 0}))
    one.merge(QueueReading())  # its breaker is off: counts in no state
    assert one.breaker == {CLOSED: 1, OPEN: 1, HALF_OPEN: 0}
    off = QueueReading()
    off.merge(QueueReading(breaker={CLOSED: 0, OPEN: 0, HALF_OPEN: 1}))
    assert off.breaker == {CLOSED: 0, OPEN: 0, HALF_OPEN: 1}
