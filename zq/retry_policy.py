"""Zaqar's ``_retry_policy``: its check, and the delay before each retry.

The policy comes from the subscription's options, else from its queue's
metadata; the queue's wins when either says ``ignore_subscription_override``
(Zaqar's rule). The phases, in order: ``retries_with_no_delay`` retries at
once; ``minimum_delay_retries`` retries ``minimum_delay`` seconds apart; the
``retry_backoff_function`` (linear, arithmetic, geometric, exponential)
from ``minimum_delay`` towards ``maximum_delay``, a step per
``LINEAR_INTERVAL`` seconds of that range; ``maximum_delay_retries``
retries ``maximum_delay`` apart. Then the notification is given up.
Defaults are Zaqar's.

Bounds (``check``): Zaqar checks only that the values are integers, so a
policy of a billion retries, or a maximum delay of months, was taken and
then held a notification (and the subscription's whole log behind it)
for ever. zq takes at most ``MAX_RETRIES`` retries per phase and delays of
at most ``MAX_DELAY`` seconds: the whole schedule then ends within days,
with at most 1,020 retries. A ``Schedule`` computes each delay when asked,
never the list: a policy stored before these checks (clamped into the
bounds when read) costs no memory either.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from zq import validation
from zq.errors import InvalidRequest

RETRIES_WITH_NO_DELAY = 3
MINIMUM_DELAY_RETRIES = 3
MINIMUM_DELAY = 5
MAXIMUM_DELAY = 30
MAXIMUM_DELAY_RETRIES = 3
LINEAR_INTERVAL = 5

# zq's bounds (see above): retries per phase, and seconds of any delay
# (an hour, as the longest delay AWS SNS delivery policies allow, the
# model Zaqar's retry policy follows).
MAX_RETRIES = 100
MAX_DELAY = 3600

POLICY = "_retry_policy"
COUNTS = ("retries_with_no_delay", "minimum_delay_retries", "maximum_delay_retries")
DELAYS = ("minimum_delay", "maximum_delay")
FUNCTION = "retry_backoff_function"
IGNORE_OVERRIDE = "ignore_subscription_override"
KEYS = frozenset((*COUNTS, *DELAYS, FUNCTION, IGNORE_OVERRIDE))
DEFAULTS: dict[str, int] = {
    "retries_with_no_delay": RETRIES_WITH_NO_DELAY,
    "minimum_delay_retries": MINIMUM_DELAY_RETRIES,
    "maximum_delay_retries": MAXIMUM_DELAY_RETRIES,
    "minimum_delay": MINIMUM_DELAY,
    "maximum_delay": MAXIMUM_DELAY,
}


def effective_policy(subscription_options: dict[str, Any],
                     queue_metadata: dict[str, Any]) -> dict[str, Any]:
    """The policy that applies: the subscription's unless the queue's forbids overriding."""
    own = subscription_options.get(POLICY) or {}
    queue = queue_metadata.get(POLICY) or {}
    own = own if isinstance(own, dict) else {}
    queue = queue if isinstance(queue, dict) else {}
    if own.get(IGNORE_OVERRIDE) or queue.get(IGNORE_OVERRIDE):
        return queue
    return own or queue


def check(policy: Any, field: str = POLICY) -> dict[str, Any]:
    """A policy as a subscription's options or a queue's metadata give it; InvalidRequest."""
    if not isinstance(policy, Mapping):
        raise InvalidRequest(f"{field} must be an object.")
    validation.refuse_unknown(policy, KEYS, lambda unknown: (
        f"{field}: unknown keys {unknown}; known: {sorted(KEYS)}."))
    for key in COUNTS:
        if key in policy:
            validation.integer(policy[key], f"{field}.{key}", 0, MAX_RETRIES)
    for key in DELAYS:
        if key in policy:
            validation.integer(policy[key], f"{field}.{key}", 0, MAX_DELAY)
    if FUNCTION in policy:
        validation.choice(policy[FUNCTION], f"{field}.{FUNCTION}", tuple(BACKOFF))
    if IGNORE_OVERRIDE in policy:
        validation.boolean(policy[IGNORE_OVERRIDE], f"{field}.{IGNORE_OVERRIDE}")
    minimum = policy.get("minimum_delay", MINIMUM_DELAY)
    maximum = policy.get("maximum_delay", MAXIMUM_DELAY)
    if minimum > maximum:
        raise InvalidRequest(
            f"{field}: minimum_delay ({minimum}) is above maximum_delay ({maximum}); "
            f"unset, they are {MINIMUM_DELAY} and {MAXIMUM_DELAY}.")
    return dict(policy)


# The backoff phase: (how many retries, the delay before the i-th of them).
Backoff = Callable[[float, float], tuple[int, Callable[[int], float]]]


def _steps(minimum: float, maximum: float) -> int:
    return int((maximum - minimum) / LINEAR_INTERVAL)


def _ratio(minimum: float, maximum: float, steps: int) -> float:
    return math.pow(10, math.log10(maximum / minimum) / (steps - 1))


def _flat(minimum: float, steps: int) -> tuple[int, Callable[[int], float]]:
    return max(steps, 0), lambda i: minimum


def _linear(minimum: float, maximum: float) -> tuple[int, Callable[[int], float]]:
    # minimum, minimum + 5, ... while below maximum.
    count = math.ceil((maximum - minimum) / LINEAR_INTERVAL) if maximum > minimum else 0
    return count, lambda i: minimum + i * LINEAR_INTERVAL


def _geometric(minimum: float, maximum: float) -> tuple[int, Callable[[int], float]]:
    steps = _steps(minimum, maximum)
    if steps < 2 or minimum <= 0:
        return _flat(minimum, steps)
    k = _ratio(minimum, maximum, steps)
    return steps, lambda i: float(int(minimum * k ** i))


def _exponential(minimum: float, maximum: float) -> tuple[int, Callable[[int], float]]:
    steps = _steps(minimum, maximum)
    if steps < 2 or minimum <= 0:
        return _flat(minimum, steps)
    k = _ratio(minimum, maximum, steps)
    return steps, lambda i: float(int(minimum / k * k ** (i + 1)))


def _arithmetic(minimum: float, maximum: float) -> tuple[int, Callable[[int], float]]:
    steps = _steps(minimum, maximum)
    if steps < 2:
        return _flat(minimum, steps)
    d = 2.0 * (maximum - minimum) / (steps * (steps - 1))
    return steps, lambda i: float(int(minimum + i * (i + 1) * d / 2))


BACKOFF: dict[str, Backoff] = {
    "linear": _linear, "arithmetic": _arithmetic, "geometric": _geometric,
    "exponential": _exponential,
}


def _bounded(policy: Mapping[str, Any], key: str, high: int) -> int:
    """A stored value as the schedule uses it: a wrong type is the default, out of range clamped."""
    value = policy.get(key, DEFAULTS[key])
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return DEFAULTS[key]
    return int(min(max(value, 0), high))


@dataclass(frozen=True)
class Schedule:
    """Seconds to wait before each retry after a first failed attempt (Zaqar's phases)."""

    no_delay: int
    minimum_retries: int
    minimum: float
    backoff_count: int
    backoff: Callable[[int], float]
    maximum: float
    maximum_retries: int

    @classmethod
    def of(cls, policy: Mapping[str, Any]) -> Schedule:
        """The schedule of a stored policy (checked with ``check``, or older: then bounded)."""
        minimum = float(_bounded(policy, "minimum_delay", MAX_DELAY))
        maximum = float(_bounded(policy, "maximum_delay", MAX_DELAY))
        function = BACKOFF.get(str(policy.get(FUNCTION, "linear")), _linear)
        count, backoff = function(minimum, maximum)
        return cls(_bounded(policy, "retries_with_no_delay", MAX_RETRIES),
                   _bounded(policy, "minimum_delay_retries", MAX_RETRIES), minimum,
                   count, backoff, maximum, _bounded(policy, "maximum_delay_retries", MAX_RETRIES))

    def __len__(self) -> int:
        return self.no_delay + self.minimum_retries + self.backoff_count + self.maximum_retries

    def delay(self, retry: int) -> float | None:
        """The delay before retry number ``retry`` (from 0); None past the last one."""
        if retry < 0:
            raise ValueError("retries count from 0")
        if retry < self.no_delay:
            return 0.0
        retry -= self.no_delay
        if retry < self.minimum_retries:
            return self.minimum
        retry -= self.minimum_retries
        if retry < self.backoff_count:
            return self.backoff(retry)
        retry -= self.backoff_count
        return self.maximum if retry < self.maximum_retries else None

    def __iter__(self) -> Iterator[float]:
        for retry in range(len(self)):
            yield self.delay(retry)  # type: ignore[misc]
