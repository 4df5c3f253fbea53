"""Queue metadata: the reserved keys, their validation and their defaults.

Keys starting with ``_`` that zq knows are *reserved*: they change how the
queue behaves. Any other key (including unknown ``_`` keys, as in Zaqar) is
the user's own and stored untouched. This module is the one place that
says what each reserved key accepts and what GET shows when it is unset.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from zq import retry_policy, validation
from zq.config import Limits
from zq.errors import InvalidRequest
from zq.poison import backoff, breaker, consumers, dead_letter

DEFAULT_MESSAGE_TTL = "_default_message_ttl"
DEFAULT_MESSAGE_DELAY = "_default_message_delay"
MAX_MESSAGES_POST_SIZE = "_max_messages_post_size"
MAX_CLAIM_COUNT = dead_letter.MAX_CLAIM_COUNT
DEAD_LETTER_QUEUE = dead_letter.DEAD_LETTER_QUEUE
DEAD_LETTER_TTL = dead_letter.DEAD_LETTER_TTL
DEAD_LETTER_EXPIRED = dead_letter.DEAD_LETTER_EXPIRED
FLAVOR = "_flavor"
ENCRYPT_MESSAGES = "_enable_encrypt_messages"
RETRY_DELAY = backoff.RETRY_DELAY
RETRY_MAX_DELAY = backoff.RETRY_MAX_DELAY
RETRY_BACKOFF = backoff.RETRY_BACKOFF
SUSPECT_LAPSED_CONSUMERS = consumers.SUSPECT_LAPSED_CONSUMERS
RETRY_POLICY = retry_policy.POLICY
BREAKER_FAILURE_RATIO = breaker.FAILURE_RATIO
BREAKER_MIN_FAILURES = breaker.MIN_FAILURES
BREAKER_WINDOW = breaker.WINDOW
BREAKER_PROBE_INTERVAL = breaker.PROBE_INTERVAL
BREAKER_CLOSE_AFTER = breaker.CLOSE_AFTER
AUTO_REDRIVE_MAX = breaker.AUTO_REDRIVE_MAX


@dataclass(frozen=True, slots=True)
class ReservedKey:
    """A reserved key: how to check a value and what GET shows when unset."""

    check: Callable[[Any, Limits], Any]
    default: Callable[[Limits], Any]


def _no_default(limits: Limits) -> None:
    return None


RESERVED: dict[str, ReservedKey] = {
    DEFAULT_MESSAGE_TTL: ReservedKey(
        lambda v, lim: validation.message_ttl(v, lim, DEFAULT_MESSAGE_TTL),
        lambda lim: lim.default_message_ttl,
    ),
    DEFAULT_MESSAGE_DELAY: ReservedKey(
        lambda v, lim: validation.message_delay(v, lim, DEFAULT_MESSAGE_DELAY),
        lambda lim: lim.default_message_delay,
    ),
    MAX_MESSAGES_POST_SIZE: ReservedKey(
        lambda v, lim: validation.integer(
            v, MAX_MESSAGES_POST_SIZE, 1, lim.max_messages_post_size
        ),
        lambda lim: lim.max_messages_post_size,
    ),
    # Zaqar takes any integer; zero or less would dead letter every message
    # before its first delivery, so zq asks for at least one.
    MAX_CLAIM_COUNT: ReservedKey(
        lambda v, lim: validation.integer(v, MAX_CLAIM_COUNT, 1, 2**31 - 1),
        _no_default,
    ),
    DEAD_LETTER_QUEUE: ReservedKey(
        lambda v, lim: validation.name(
            v, field=DEAD_LETTER_QUEUE, max_length=lim.max_queue_name_length
        ),
        _no_default,
    ),
    DEAD_LETTER_TTL: ReservedKey(
        lambda v, lim: validation.message_ttl(v, lim, DEAD_LETTER_TTL),
        _no_default,
    ),
    # Needs a _dead_letter_queue too (_check_together).
    DEAD_LETTER_EXPIRED: ReservedKey(
        lambda v, lim: validation.boolean(v, DEAD_LETTER_EXPIRED),
        _no_default,
    ),
    FLAVOR: ReservedKey(
        lambda v, lim: validation.name(v, field=FLAVOR),
        _no_default,
    ),
    # Shown as false when unset, as Zaqar does. Whether the server has keys
    # to honour true is the service's check (zq.encryption).
    ENCRYPT_MESSAGES: ReservedKey(
        lambda v, lim: validation.boolean(v, ENCRYPT_MESSAGES),
        lambda lim: False,
    ),
    # Backoff between deliveries (zq.poison.backoff); shown only when set, as the
    # dead letter keys: a default shown would be sent back by clients.
    RETRY_DELAY: ReservedKey(
        lambda v, lim: validation.message_delay(v, lim, RETRY_DELAY),
        _no_default,
    ),
    RETRY_MAX_DELAY: ReservedKey(
        lambda v, lim: validation.message_delay(v, lim, RETRY_MAX_DELAY),
        _no_default,
    ),
    RETRY_BACKOFF: ReservedKey(
        lambda v, lim: validation.choice(v, RETRY_BACKOFF, backoff.KINDS),
        _no_default,
    ),
    # Zaqar's notification retry policy (zq.retry_policy), within
    # zq's bounds; shown only when set.
    RETRY_POLICY: ReservedKey(
        lambda v, lim: retry_policy.check(v, RETRY_POLICY),
        _no_default,
    ),
    # Suspected consumers (zq.poison.consumers); shown only when set.
    SUSPECT_LAPSED_CONSUMERS: ReservedKey(
        lambda v, lim: consumers.check_setting(v),
        _no_default,
    ),
    # The breaker (zq.poison.breaker): on with a ratio; the others may be set
    # alone and take effect once it is. Shown only when set.
    BREAKER_FAILURE_RATIO: ReservedKey(
        lambda v, lim: breaker.check_failure_ratio(v), _no_default),
    BREAKER_MIN_FAILURES: ReservedKey(
        lambda v, lim: breaker.check_min_failures(v), _no_default),
    BREAKER_WINDOW: ReservedKey(lambda v, lim: breaker.check_window(v), _no_default),
    BREAKER_PROBE_INTERVAL: ReservedKey(
        lambda v, lim: breaker.check_probe_interval(v), _no_default),
    BREAKER_CLOSE_AFTER: ReservedKey(lambda v, lim: breaker.check_close_after(v), _no_default),
    AUTO_REDRIVE_MAX: ReservedKey(
        lambda v, lim: breaker.check_auto_redrive_max(v), _no_default),
}


def is_reserved(key: str) -> bool:
    """Whether ``key`` is one of zq's reserved metadata keys."""
    return key in RESERVED


def validate(metadata: Any, limits: Limits) -> dict[str, Any]:
    """Check a whole metadata object; returns the copy to store.

    A reserved key set to ``null`` means unset and is dropped. Raises
    InvalidRequest naming the key and its allowed values, or when the
    encoded metadata exceeds ``limits.max_queue_metadata`` bytes.
    """
    if not isinstance(metadata, Mapping):
        raise InvalidRequest("Queue metadata must be a JSON object.")
    checked: dict[str, Any] = {}
    for key, value in metadata.items():
        reserved = RESERVED.get(key)
        if reserved is None:
            checked[key] = value
        elif value is not None:
            checked[key] = reserved.check(value, limits)
    _check_together(checked)
    together = backoff.check_settings(checked)
    if together is not None:
        raise InvalidRequest(together)
    size = len(orjson.dumps(checked))
    if size > limits.max_queue_metadata:
        raise InvalidRequest(
            f"Queue metadata is too large: {size} bytes, at most "
            f"{limits.max_queue_metadata} allowed."
        )
    return checked


def _check_together(checked: Mapping[str, Any]) -> None:
    """Refuse reserved keys that cannot take effect without another one."""
    if checked.get(DEAD_LETTER_EXPIRED) and not checked.get(DEAD_LETTER_QUEUE):
        raise InvalidRequest(
            f"{DEAD_LETTER_EXPIRED} is true but the queue has no {DEAD_LETTER_QUEUE}: "
            "expired messages would have nowhere to go. Set both, or unset "
            f"{DEAD_LETTER_EXPIRED}."
        )


def with_defaults(metadata: Mapping[str, Any], limits: Limits) -> dict[str, Any]:
    """The metadata as GET shows it: unset reserved keys with a default filled in.

    ``_enable_encrypt_messages`` shows false when unset. Reserved keys
    without a configured default (``_max_claim_count``, the dead letter
    keys, ``_flavor``) appear only when set. Showing them as null would
    break python-zaqarclient: its ``Queue.metadata(new_meta=...)`` turns a
    null key into an ``add`` and then a ``remove`` of the same key, so a
    dead letter policy could never be set through it.
    """
    shown = dict(metadata)
    for key, reserved in RESERVED.items():
        if shown.get(key) is None:
            default = reserved.default(limits)
            if default is None:
                shown.pop(key, None)
            else:
                shown[key] = default
    return shown


def effective(metadata: Mapping[str, Any], key: str, limits: Limits) -> Any:
    """The value a reserved key has for a queue: its own, else the default."""
    value = metadata.get(key)
    return RESERVED[key].default(limits) if value is None else value
