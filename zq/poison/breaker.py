"""The breaker: telling a dependency outage from poison, decided here once.

A queue whose metadata sets ``_breaker_failure_ratio`` has a breaker,
shared by every worker and server on its backend. Its failures (a reject by
the claim holder, retry or terminal, or a lapsed claim) and successes (a
delete by the holder of a live claim) are recorded per queue by the driver
in the same atomic step as the reject, delete, claim or pop (the storage
contract zq.storage.breakers). When, within ``_breaker_window`` seconds,
failures make at least ``_breaker_failure_ratio`` of the outcomes AND
at least ``_breaker_min_failures`` distinct messages failed, the breaker
*opens*: failures are forgiven (``forgiven_count``, not charged toward
``_max_claim_count``), a terminal reject is held as a retry, and claims get
one probe message per ``_breaker_probe_interval``. ``_breaker_close_after``
successful probes in a row close it again (through *half-open*); a failed
probe re-opens it. docs/poison.md tells the whole story.

This module holds what every driver shares: the policy read from metadata
(``policy_from_metadata``, validated by zq.metadata with the ``check_*``
functions), the trip test (``trips``), which stored description an outage
is known by (``stored_description``, ``most_common``) and the fingerprint
that matches descriptions which differ only by ids and numbers
(``description_fingerprint``, compared above the contract only).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zq import validation
from zq.errors import InvalidRequest

FAILURE_RATIO = "_breaker_failure_ratio"
MIN_FAILURES = "_breaker_min_failures"
WINDOW = "_breaker_window"
PROBE_INTERVAL = "_breaker_probe_interval"
CLOSE_AFTER = "_breaker_close_after"
AUTO_REDRIVE_MAX = "_auto_redrive_max"
KEYS = (FAILURE_RATIO, MIN_FAILURES, WINDOW, PROBE_INTERVAL, CLOSE_AFTER, AUTO_REDRIVE_MAX)

# Defaults (docs/poison.md says why each).
DEFAULT_MIN_FAILURES = 20
DEFAULT_WINDOW = 60
DEFAULT_PROBE_INTERVAL = 5
DEFAULT_CLOSE_AFTER = 3
DEFAULT_AUTO_REDRIVE_MAX = 1

# Upper bounds, so that a typo cannot make a window of years.
MAX_WINDOW = 86400
MAX_PROBE_INTERVAL = 3600
MAX_COUNT = 1_000_000

# States (BreakerState.state, the ``breaker`` event's detail).
CLOSED = "closed"
OPEN = "open"
HALF_OPEN = "half-open"
STATES = (CLOSED, OPEN, HALF_OPEN)
# States an operator may force (POST /v2/queues/{q}/breaker).
FORCEABLE = (OPEN, CLOSED)

# The longest description a driver stores for a failure (outcomes of the
# window, a message's ``last_failure``): enough to tell outages apart.
DESCRIPTION_CHARS = 200


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """A queue's breaker settings (all validated, defaults applied)."""

    failure_ratio: float
    min_failures: int = DEFAULT_MIN_FAILURES
    window: int = DEFAULT_WINDOW
    probe_interval: int = DEFAULT_PROBE_INTERVAL
    close_after: int = DEFAULT_CLOSE_AFTER
    auto_redrive_max: int = DEFAULT_AUTO_REDRIVE_MAX

    def window_start(self, now: float) -> float:
        """Outcomes at or after this time count (older ones are trimmed)."""
        return now - self.window

    def probe_hold(self, now: float) -> float:
        """Until when a message whose probe failed at ``now`` is held back.

        Without it the message at the head of an open queue is the probe
        every time: one poison message there fails every probe and the
        breaker never closes. Held for the close_after probes a close needs
        plus the one the failure delays (next probe one interval on), the
        next probes go to other messages, and a close, if the outage is
        over, comes before the poison message is claimable again.
        """
        return now + self.probe_interval * (self.close_after + 1)


def policy_from_metadata(metadata: Mapping[str, Any]) -> BreakerPolicy | None:
    """The queue's breaker, or None when ``_breaker_failure_ratio`` is unset.

    The other keys may be set alone (they take effect once the ratio is);
    the values were validated when the metadata was written (zq.metadata).
    """
    ratio = metadata.get(FAILURE_RATIO)
    if ratio is None:
        return None

    def setting(key: str, default: int) -> int:
        value = metadata.get(key)
        return default if value is None else int(value)

    return BreakerPolicy(
        failure_ratio=float(ratio),
        min_failures=setting(MIN_FAILURES, DEFAULT_MIN_FAILURES),
        window=setting(WINDOW, DEFAULT_WINDOW),
        probe_interval=setting(PROBE_INTERVAL, DEFAULT_PROBE_INTERVAL),
        close_after=setting(CLOSE_AFTER, DEFAULT_CLOSE_AFTER),
        auto_redrive_max=setting(AUTO_REDRIVE_MAX, DEFAULT_AUTO_REDRIVE_MAX),
    )


def check_failure_ratio(value: Any) -> float | int:
    """``_breaker_failure_ratio``: a number with 0 < r <= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise InvalidRequest(f"{FAILURE_RATIO} must be a number above 0 and at most 1, "
                             f"got {value!r}.")
    if not 0 < value <= 1:
        raise InvalidRequest(f"{FAILURE_RATIO} must be above 0 and at most 1, got {value}.")
    return value


def check_min_failures(value: Any) -> int:
    """``_breaker_min_failures``: distinct failed messages, an integer >= 1."""
    return validation.integer(value, MIN_FAILURES, 1, MAX_COUNT)


def check_window(value: Any) -> int:
    """``_breaker_window``: seconds, an integer >= 1."""
    return validation.integer(value, WINDOW, 1, MAX_WINDOW)


def check_probe_interval(value: Any) -> int:
    """``_breaker_probe_interval``: seconds, an integer >= 1."""
    return validation.integer(value, PROBE_INTERVAL, 1, MAX_PROBE_INTERVAL)


def check_close_after(value: Any) -> int:
    """``_breaker_close_after``: successful probes in a row, an integer >= 1."""
    return validation.integer(value, CLOSE_AFTER, 1, MAX_COUNT)


def check_auto_redrive_max(value: Any) -> int:
    """``_auto_redrive_max``: automatic redrives per message, an integer >= 0 (0: off)."""
    return validation.integer(value, AUTO_REDRIVE_MAX, 0, MAX_COUNT)


def trips(policy: BreakerPolicy, failures: int, successes: int, failed_messages: int) -> bool:
    """Whether the window's outcomes open a closed breaker.

    ``failures`` and ``successes`` are the outcomes recorded in the window,
    ``failed_messages`` the distinct messages among the failures.
    """
    total = failures + successes
    return (total > 0 and failures >= policy.failure_ratio * total
            and failed_messages >= policy.min_failures)


def stored_description(text: str | None) -> str | None:
    """A failure's description as drivers store it (outcomes, ``last_failure``)."""
    return None if text is None else text[:DESCRIPTION_CHARS]


def most_common(failures: Iterable[tuple[float, str | None]]) -> str | None:
    """The description most failures of a window share: ``(time, description)`` pairs.

    Failures without one (lapses, rejects without a description) are left
    out; a tie goes to the description seen most recently; None when no
    failure had one. Drivers that cannot run this (a Lua script) compute
    the same.
    """
    counts: dict[str, list[float]] = {}
    for time, description in failures:
        if description is None:
            continue
        seen = counts.setdefault(description, [0, time])
        seen[0] += 1
        seen[1] = max(seen[1], time)
    if not counts:
        return None
    return max(counts.items(), key=lambda item: (item[1][0], item[1][1]))[0]


_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_HEX = re.compile(r"\b(?:0x)?[0-9a-f]*\d[0-9a-f]*\b")
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")


def normalized_description(text: str) -> str:
    """Lowercase, uuids, hex runs and numbers replaced, spaces collapsed."""
    text = text.lower()
    text = _UUID.sub("<id>", text)
    text = _HEX.sub("<n>", text)
    text = _DIGITS.sub("<n>", text)
    return _SPACES.sub(" ", text).strip()


def description_fingerprint(text: str | None) -> str | None:
    """A short stable hash of ``normalized_description(text)``; None for None.

    "connection to 10.0.0.7:5432 refused (attempt 3)" and "... 10.0.0.9:5432
    refused (attempt 12)" share one: an outage is known by it (auto-redrive).
    """
    if text is None:
        return None
    normal = normalized_description(stored_description(text) or "")
    return hashlib.sha256(normal.encode()).hexdigest()[:16]
