"""The delete rule every driver applies (zq.storage.checks.check_delete), on its own."""

from __future__ import annotations

import pytest

from zq.errors import ClaimMismatch, MessageIsClaimed
from zq.storage.checks import check_delete


def test_a_free_message_deletes_without_a_claim_id() -> None:
    check_delete("m", None, None)


def test_a_held_message_needs_its_claim_id() -> None:
    with pytest.raises(MessageIsClaimed, match="'m' is claimed"):
        check_delete("m", None, "c1")
    check_delete("m", "c1", "c1")


@pytest.mark.parametrize("holder", [None, "c2"])
def test_a_claim_id_that_does_not_hold_the_message_is_a_mismatch(holder: str | None) -> None:
    with pytest.raises(ClaimMismatch, match="'c1' does not hold message 'm'"):
        check_delete("m", "c1", holder)
