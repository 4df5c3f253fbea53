"""The rules of deleting and moving one message, the same on every driver.

The SQL and MongoDB drivers call them with what they read inside their
atomic step; the Redis scripts apply the same comparisons (delete.lua,
move.lua) and the driver maps their answers onto the same errors. The
contract suite (tests/contract/) pins every branch on every driver.
"""

from __future__ import annotations

from zq.errors import ClaimMismatch, MessageIsClaimed
from zq.poison.moves import Move


def check_delete(message_id: str, claim_id: str | None, holder: str | None) -> None:
    """The delete rule of one alive message, the same on every driver.

    ``holder`` is the id of the live claim holding the message (None when
    free). Without a claim id a held message is refused (MessageIsClaimed);
    with one, the message must be held by exactly that claim
    (ClaimMismatch). Returning means: delete it. The Redis driver runs the
    same three-way comparison inside delete.lua (one round trip, atomic)
    and maps its answer onto these errors; the contract suite pins all three.
    """
    if claim_id is None:
        if holder is not None:
            raise MessageIsClaimed.of(message_id)
    elif holder != claim_id:
        raise ClaimMismatch.of(claim_id, message_id)


def check_move(message_id: str, claim_id: str | None, holder: str | None) -> bool:
    """Whether ``MessageController.move`` moves one alive message, the same on every driver.

    ``holder`` is the id of the live claim holding the message (None when
    free). Without ``claim_id`` a held message stays where it is (False):
    a move never takes a message from a live claim. With ``claim_id`` the
    message must be held by exactly that claim, else ClaimMismatch.
    """
    if claim_id is None:
        return holder is None
    if holder != claim_id:
        raise ClaimMismatch.of(claim_id, message_id)
    return True


def check_destination(queue: str, move: Move) -> None:
    """Refuse a move into the queue the messages are in (a caller's mistake)."""
    if move.to == queue:
        raise ValueError(f"a move cannot go from queue {queue!r} to itself")
