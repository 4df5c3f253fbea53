"""zq.metadata: reserved keys, their checks and their GET defaults."""

from __future__ import annotations

import pytest

from zq import metadata
from zq.config import Limits
from zq.errors import InvalidRequest

LIMITS = Limits()


def test_validate_keeps_ordinary_keys_and_drops_null_reserved():
    checked = metadata.validate(
        {"color": "red", "_private": [1], "_max_claim_count": None}, LIMITS
    )
    assert checked == {"color": "red", "_private": [1]}


def test_validate_accepts_every_reserved_key_at_its_edges():
    document = {
        "_default_message_ttl": 60,
        "_default_message_delay": 900,
        "_max_messages_post_size": 262144,
        "_max_claim_count": 1,
        "_dead_letter_queue": "dlq.v1",
        "_dead_letter_queue_messages_ttl": 1209600,
        "_flavor": "gold",
        "_enable_encrypt_messages": True,
        "_dead_letter_expired": True,
    }
    assert metadata.validate(document, LIMITS) == document


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("_default_message_ttl", 59, "_default_message_ttl must be between 60 and 1209600"),
        ("_default_message_ttl", "3600", "_default_message_ttl must be an integer"),
        ("_default_message_delay", 901, "_default_message_delay must be between 0 and 900"),
        ("_max_messages_post_size", 0, "_max_messages_post_size must be between 1 and 262144"),
        ("_max_messages_post_size", 262145, "_max_messages_post_size"),
        ("_max_claim_count", 0, "_max_claim_count must be between 1"),
        ("_max_claim_count", True, "_max_claim_count must be an integer"),
        ("_dead_letter_queue", "bad name", "_dead_letter_queue may only contain"),
        ("_dead_letter_queue", 5, "_dead_letter_queue must be a non-empty string"),
        ("_dead_letter_queue", "x" * 65, "_dead_letter_queue may not be more than 64"),
        ("_dead_letter_queue_messages_ttl", 59, "_dead_letter_queue_messages_ttl must be"),
        ("_flavor", "", "_flavor must be a non-empty string"),
        ("_enable_encrypt_messages", 1, "_enable_encrypt_messages must be true or false"),
        ("_enable_encrypt_messages", "true", "_enable_encrypt_messages must be true or false"),
        ("_dead_letter_expired", 1, "_dead_letter_expired must be true or false"),
        ("_dead_letter_expired", "yes", "_dead_letter_expired must be true or false"),
        ("_dead_letter_expired", True, "_dead_letter_expired is true but the queue has no "
                                       "_dead_letter_queue"),
    ],
)
def test_validate_refuses_bad_reserved_values(key, value, fragment):
    with pytest.raises(InvalidRequest, match=fragment):
        metadata.validate({key: value}, LIMITS)


def test_validate_refuses_non_objects_and_oversize():
    with pytest.raises(InvalidRequest, match="JSON object"):
        metadata.validate([1], LIMITS)
    small = Limits(max_queue_metadata=20)
    with pytest.raises(InvalidRequest, match="at most 20"):
        metadata.validate({"k": "v" * 20}, small)


def test_limits_come_from_config():
    strict = Limits(max_message_ttl=600)
    with pytest.raises(InvalidRequest, match="between 60 and 600"):
        metadata.validate({"_default_message_ttl": 601}, strict)


def test_with_defaults_fills_reserved_keys_that_have_a_default():
    shown = metadata.with_defaults({"color": "red", "_max_claim_count": 3}, LIMITS)
    assert shown == {
        "color": "red",
        "_default_message_ttl": 3600,
        "_default_message_delay": 0,
        "_max_messages_post_size": 262144,
        "_max_claim_count": 3,
        "_enable_encrypt_messages": False,
    }
    # Keys without a default are left out rather than shown as null.
    assert "_dead_letter_queue" not in shown


def test_effective():
    assert metadata.effective({}, metadata.DEFAULT_MESSAGE_TTL, LIMITS) == 3600
    assert metadata.effective(
        {"_default_message_ttl": 120}, metadata.DEFAULT_MESSAGE_TTL, LIMITS
    ) == 120


def test_dead_letter_expired_false_needs_no_dead_letter_queue():
    assert metadata.validate({"_dead_letter_expired": False}, LIMITS) == {
        "_dead_letter_expired": False}
    with pytest.raises(InvalidRequest, match="nowhere to go"):
        metadata.validate({"_dead_letter_expired": True, "_dead_letter_queue": None}, LIMITS)


def test_backoff_keys_are_validated_together():
    document = {"_retry_delay": 1, "_retry_max_delay": 900, "_retry_backoff": "linear"}
    assert metadata.validate(document, LIMITS) == document
    assert metadata.validate({"_retry_delay": 0}, LIMITS) == {"_retry_delay": 0}
    assert metadata.validate({"_retry_delay": 5, "_retry_max_delay": 5}, LIMITS)


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ({"_retry_delay": -1}, "_retry_delay must be between 0 and 900"),
        ({"_retry_delay": 901}, "_retry_delay must be between 0 and 900"),
        ({"_retry_delay": 1.5}, "_retry_delay must be an integer"),
        ({"_retry_delay": True}, "_retry_delay must be an integer"),
        ({"_retry_delay": 1, "_retry_max_delay": 901},
         "_retry_max_delay must be between 0 and 900"),
        ({"_retry_delay": 10, "_retry_max_delay": 9},
         "_retry_max_delay (9) must be at least _retry_delay (10)"),
        ({"_retry_delay": 1, "_retry_backoff": "random"},
         "_retry_backoff must be one of 'fixed', 'linear', 'exponential'"),
        ({"_retry_delay": 1, "_retry_backoff": 2}, "_retry_backoff must be one of"),
        ({"_retry_max_delay": 60}, "_retry_max_delay cannot take effect without _retry_delay"),
        ({"_retry_backoff": "fixed"}, "_retry_backoff cannot take effect without _retry_delay"),
    ],
)
def test_bad_backoff_settings_are_refused(document, fragment):
    with pytest.raises(InvalidRequest) as refused:
        metadata.validate(document, LIMITS)
    assert fragment in str(refused.value)


def test_backoff_keys_show_only_when_set():
    shown = metadata.with_defaults({}, LIMITS)
    assert not {"_retry_delay", "_retry_max_delay", "_retry_backoff"} & set(shown)
