"""The backoff rule between deliveries, in one place.

A queue whose metadata sets ``_retry_delay`` keeps a message that was
handed out and not deleted away from claims for a while: when a claim on
it ends without a delete (released, expired, or rejected for a retry
without ``retry_after``), the message becomes claimable again only after
``min(max, base * f(n))`` seconds, ``n`` its claim count, ``f`` one of

- ``fixed``: 1
- ``linear``: n
- ``exponential`` (the default): 2 ** (n - 1)

less up to ``JITTER`` of it at random, so that messages that failed
together do not all come back at the same moment (never more than the
computed delay, so ``_retry_max_delay`` is a true maximum).

The delay is decided when the claim is made (the claim count it will have
is known then), and the driver stores the moment the message becomes
claimable again as ``claim expiry + delay``: a claim that simply expires
implies its backoff with no process running at that moment. Renewing a
claim shifts that moment with the claim's expiry; releasing it (or a retry
reject without ``retry_after``) makes it ``now + delay``. Drivers carry out
the values this module computes; the Redis scripts receive them as a table
(``schedule``) and per-message factors (``jitter_factors``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

RETRY_DELAY = "_retry_delay"
RETRY_MAX_DELAY = "_retry_max_delay"
RETRY_BACKOFF = "_retry_backoff"

FIXED = "fixed"
LINEAR = "linear"
EXPONENTIAL = "exponential"
KINDS = (FIXED, LINEAR, EXPONENTIAL)
DEFAULT_KIND = EXPONENTIAL

# The largest share of a delay that jitter takes off.
JITTER = 0.1


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """How long a message waits before it is claimable again, by claim count."""

    delay: float  # the base, seconds
    max_delay: float  # the cap, seconds (>= delay)
    kind: str = DEFAULT_KIND
    jitter: float = JITTER  # tests pass 0 for exact delays
    draw: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def base_delay(self, claim_count: int) -> float:
        """``min(max_delay, delay * f(claim_count))``, no jitter."""
        n = max(1, claim_count)
        if self.kind == FIXED:
            factor = 1.0
        elif self.kind == LINEAR:
            factor = float(n)
        else:
            # 2 ** (n - 1) overflows floats past n ~ 1024; the cap is reached long before.
            factor = 2.0 ** min(n - 1, 1023)
        return min(self.max_delay, self.delay * factor)

    def jitter_factor(self) -> float:
        """One random factor in (1 - jitter, 1] to multiply a delay by."""
        return 1.0 - self.jitter * self.draw()

    def delay_for(self, claim_count: int) -> float:
        """The delay a delivery with ``claim_count`` claims gets, jitter applied."""
        return self.base_delay(claim_count) * self.jitter_factor()

    def schedule(self) -> list[float]:
        """``base_delay(1), base_delay(2), ...`` up to the first that reaches the cap.

        A claim count past the end gets the last value (the cap), so a
        script indexes ``schedule[min(n, #schedule)]``.
        """
        if self.delay <= 0 or self.kind == FIXED:
            return [self.base_delay(1)]
        if self.kind == LINEAR:
            steps = math.ceil(self.max_delay / self.delay)
        else:
            steps = math.ceil(math.log2(self.max_delay / self.delay)) + 1
        return [self.base_delay(n) for n in range(1, max(1, steps) + 1)]


def policy_from_metadata(
    metadata: Mapping[str, Any], default_max_delay: float
) -> BackoffPolicy | None:
    """The queue's backoff, or None when ``_retry_delay`` is unset or 0.

    ``default_max_delay`` (the server's max message delay) caps the delay
    when ``_retry_max_delay`` is unset. The values were validated when the
    metadata was written (zq.metadata).
    """
    delay = metadata.get(RETRY_DELAY)
    if not delay:
        return None
    max_delay = metadata.get(RETRY_MAX_DELAY)
    return BackoffPolicy(
        delay=float(delay),
        max_delay=float(default_max_delay if max_delay is None else max_delay),
        kind=str(metadata.get(RETRY_BACKOFF) or DEFAULT_KIND),
    )


def check_settings(metadata: Mapping[str, Any]) -> str | None:
    """What is wrong with the backoff keys taken together, or None.

    Each key's own type and range are checked by zq.metadata; this checks
    that they make sense together: ``_retry_max_delay`` and
    ``_retry_backoff`` only take effect with a backoff, that is a
    ``_retry_delay`` above 0 (0 and unset both mean none, as in
    ``policy_from_metadata``), and the cap is not below the base.
    """
    delay = metadata.get(RETRY_DELAY)
    max_delay = metadata.get(RETRY_MAX_DELAY)
    if not delay:
        alone = [key for key in (RETRY_MAX_DELAY, RETRY_BACKOFF) if metadata.get(key) is not None]
        if alone:
            return (f"{' and '.join(alone)} cannot take effect without {RETRY_DELAY} "
                    f"above 0 (0 or unset: no backoff); set {RETRY_DELAY} (seconds) too.")
        return None
    if max_delay is not None and max_delay < delay:
        return (f"{RETRY_MAX_DELAY} ({max_delay}) must be at least {RETRY_DELAY} ({delay}).")
    return None


def release_delay(delay_until: float, claim_expires: float) -> float:
    """The backoff a held message carries: how long after its claim it stays unclaimable.

    Drivers that store ``claim_expires`` and ``delay_until`` (the moment the
    message is claimable again) keep this difference when a claim is
    renewed, and wait it out from now when it is released.
    """
    return max(0.0, delay_until - claim_expires)
