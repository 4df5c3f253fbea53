"""The outage breaker as operators see it: read beside the stats, forced by hand.

The breaker's state lives in the backend (zq.storage.breakers) and moves in
the reject, delete and claim steps that count failures and successes (their
rules: zq.service.deliveries.outage_rules); its policy comes from the
queue's metadata (zq.poison.breaker). This part only reads it for one
queue, or forces it open or closed.
"""

from __future__ import annotations

from typing import Any

from zq import validation
from zq.errors import Conflict, InvalidRequest, QueueNotFound
from zq.poison import breaker
from zq.storage.base import Storage
from zq.storage.breakers import BreakerState


def forced_state(document: Any) -> str:
    """``{"state": "open"|"closed"}`` of ``POST .../breaker``; the state to force.

    The body is required (forcing has no default) and may hold nothing else:
    a field zq does not know would be silently ignored.
    """
    if document is None:
        raise InvalidRequest('The breaker body is required: {"state": "open"} or '
                             '{"state": "closed"}.')
    document = validation.object_document(document, "The breaker body")
    validation.refuse_unknown(document, ("state",), lambda unknown: (
        'The breaker body may only hold "state", not '
        f'{", ".join(repr(k) for k in unknown)}.'))
    if "state" not in document:
        raise InvalidRequest('The breaker body must contain "state": "open" or "closed".')
    return validation.choice(document["state"], "state", breaker.FORCEABLE)


def read(storage: Storage, project: str, queue: str, metadata: dict[str, Any],
         now: float) -> BreakerState | None:
    """The queue's breaker; None when it is off (no ``_breaker_failure_ratio``).

    Also None on a backend whose driver runs no breaker (``has_breaker``
    False): no breaker state exists there to show.
    """
    policy = breaker.policy_from_metadata(metadata)
    if policy is None or not storage.has_breaker:
        return None
    return storage.breakers.read(project, queue, policy, now)


def force(storage: Storage, project: str, queue: str, state: str, now: float) -> BreakerState:
    """Force the breaker of an existing queue whose breaker is on into ``state``.

    QueueNotFound for a queue never created; Conflict when its breaker is
    off: forcing it would write a state no step reads, and show nothing.
    """
    current = storage.queues.read_metadata(project, queue)
    if not current.exists:
        raise QueueNotFound.gone(queue)
    policy = breaker.policy_from_metadata(current.metadata)
    if policy is None:
        raise Conflict(
            f"The breaker of queue {queue!r} is off: set {breaker.FAILURE_RATIO} in its "
            "metadata to turn it on (docs/poison.md).")
    if not storage.has_breaker:
        raise Conflict(f"The storage of queue {queue!r} runs no breaker: there is "
                       "nothing to force.")
    return storage.breakers.force(project, queue, state, policy, now)
