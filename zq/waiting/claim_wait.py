"""What the falcon app tells zq.buffered_wsgi about a claim that may wait."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# The WSGI environ key of a request's ClaimWait.
ENVIRON_KEY = "zq.claim_wait"


@dataclass
class ClaimWait:
    """A claim attempt of a request that asked to wait (``wait`` > 0).

    Left in the environ by the claim resource on every attempt. ``claimed``:
    how many messages this attempt delivered (0: it found nothing, and the
    request waits on unless its time is up). ``more``: the claim took as
    many as it asked for, so the queue may hold more for the next waiter.
    ``release``: ends the claim made, for a client that left meanwhile.
    """

    project: str
    queue: str
    seconds: float
    claimed: int = 0
    more: bool = False
    release: Callable[[], None] | None = None

    @property
    def key(self) -> tuple[str, str]:
        return self.project, self.queue
