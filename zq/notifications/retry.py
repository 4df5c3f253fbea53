"""Zaqar's ``_retry_policy``: after a failed attempt, the delays of the retries.

The policy comes from the subscription's options, else from its queue's
metadata; the queue's wins when either says ``ignore_subscription_override``
(Zaqar's rule). The phases, in order: ``retries_with_no_delay`` retries at
once; ``minimum_delay_retries`` retries ``minimum_delay`` seconds apart; the
``retry_backoff_function`` (linear, arithmetic, geometric, exponential)
from ``minimum_delay`` towards ``maximum_delay``, a step per
``LINEAR_INTERVAL`` seconds of that range; ``maximum_delay_retries``
retries ``maximum_delay`` apart. Then the notification is given up.
Defaults are Zaqar's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

RETRIES_WITH_NO_DELAY = 3
MINIMUM_DELAY_RETRIES = 3
MINIMUM_DELAY = 5
MAXIMUM_DELAY = 30
MAXIMUM_DELAY_RETRIES = 3
LINEAR_INTERVAL = 5

POLICY = "_retry_policy"


def effective_policy(subscription_options: dict[str, Any],
                     queue_metadata: dict[str, Any]) -> dict[str, Any]:
    """The policy that applies: the subscription's unless the queue's forbids overriding."""
    own = subscription_options.get(POLICY) or {}
    queue = queue_metadata.get(POLICY) or {}
    own = own if isinstance(own, dict) else {}
    queue = queue if isinstance(queue, dict) else {}
    if own.get("ignore_subscription_override") or queue.get("ignore_subscription_override"):
        return queue
    return own or queue


def _steps(minimum: float, maximum: float) -> int:
    return int((maximum - minimum) / LINEAR_INTERVAL)


def _linear(minimum: float, maximum: float) -> list[float]:
    delays, delay = [], minimum
    while delay < maximum:
        delays.append(delay)
        delay += LINEAR_INTERVAL
    return delays


def _ratio(minimum: float, maximum: float, steps: int) -> float:
    return math.pow(10, math.log10(maximum / minimum) / (steps - 1))


def _geometric(minimum: float, maximum: float) -> list[float]:
    steps = _steps(minimum, maximum)
    if steps < 2 or minimum <= 0:
        return [minimum] * max(steps, 0)
    k = _ratio(minimum, maximum, steps)
    return [float(int(minimum * k ** (a - 1))) for a in range(1, steps + 1)]


def _exponential(minimum: float, maximum: float) -> list[float]:
    steps = _steps(minimum, maximum)
    if steps < 2 or minimum <= 0:
        return [minimum] * max(steps, 0)
    k = _ratio(minimum, maximum, steps)
    return [float(int(minimum / k * k ** a)) for a in range(1, steps + 1)]


def _arithmetic(minimum: float, maximum: float) -> list[float]:
    steps = _steps(minimum, maximum)
    if steps < 2:
        return [minimum] * max(steps, 0)
    d = 2.0 * (maximum - minimum) / (steps * (steps - 1))
    return [float(int(minimum + (a - 1) * a * d / 2)) for a in range(1, steps + 1)]


BACKOFF: dict[str, Callable[[float, float], list[float]]] = {
    "linear": _linear, "arithmetic": _arithmetic, "geometric": _geometric,
    "exponential": _exponential,
}


def retry_delays(policy: dict[str, Any]) -> list[float]:
    """Seconds to wait before each retry after a first failed attempt (Zaqar's phases)."""
    def number(key: str, default: float) -> float:
        value = policy.get(key, default)
        return float(value) if isinstance(value, int | float) and value >= 0 else default

    minimum = number("minimum_delay", MINIMUM_DELAY)
    maximum = number("maximum_delay", MAXIMUM_DELAY)
    function = BACKOFF.get(str(policy.get("retry_backoff_function", "linear")), _linear)
    return (
        [0.0] * int(number("retries_with_no_delay", RETRIES_WITH_NO_DELAY))
        + [minimum] * int(number("minimum_delay_retries", MINIMUM_DELAY_RETRIES))
        + function(minimum, maximum)
        + [maximum] * int(number("maximum_delay_retries", MAXIMUM_DELAY_RETRIES))
    )
