"""Which changes of a queue's breaker are news to operators: trips and closes.

A ``breaker`` event (zq.events) records every change of state with its
``previous`` state and whether it was ``forced``. Operators hear of two:
the breaker leaving closed (``tripped``: deliveries are held back) and
coming back to closed (``closed``: full speed again). The steps between
(half-open after a good probe, open again after a failed one) are the
breaker doing its job, not news. The Prometheus trip counter
(zq.metrics.tail) and the subscription alerts (zq.notifications.payloads)
both read them here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zq.events import FORCED, PREVIOUS, STATE
from zq.poison.breaker import CLOSED, HALF_OPEN, OPEN

TRIPPED = "tripped"
CLOSED_AGAIN = "closed"


def alert_of(detail: Mapping[str, Any]) -> str | None:
    """TRIPPED, CLOSED_AGAIN or None (a step operators need not hear of) for a breaker event."""
    state, previous = detail.get(STATE), detail.get(PREVIOUS)
    if state == previous:
        return None  # forced into the state it was in: nothing changed
    if previous == CLOSED and state in (OPEN, HALF_OPEN):
        return TRIPPED
    if state == CLOSED and previous in (OPEN, HALF_OPEN):
        return CLOSED_AGAIN
    return None


def is_trip(detail: Mapping[str, Any]) -> bool:
    """Whether a breaker event is a trip by failures (a forced open is not)."""
    return alert_of(detail) == TRIPPED and not detail.get(FORCED)
