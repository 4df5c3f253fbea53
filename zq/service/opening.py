"""Opening the stored bodies a read returns: each one alone.

A sealed body (zq.encryption) that cannot be opened (its key is gone, it
was altered or copied from another message) must fail alone: the read
returns the other messages and reports this one as ``Unreadable``, logged
at ERROR with its id, instead of failing as a whole. What then becomes of
an unreadable message that a claim or pop took is the service's decision
(zq.service.rejects.set_aside, docs/encryption.md).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from zq.encryption import BodyCipher, is_sealed, open_body
from zq.errors import EncryptionFailure
from zq.storage.base import ClaimRecord, MessageRecord

log = logging.getLogger("zq.encryption")

# The response header that lists the ids of the messages a claim or a
# listing left out because their bodies could not be opened.
HEADER = "X-Zq-Unreadable-Messages"


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A message left out of a read: its stored body could not be opened."""

    id: str
    marker: int  # its place in the queue's order (a listing pages past it)
    reason: str  # EncryptionFailure's description: names the message and the key id


@dataclass(frozen=True, slots=True)
class Opened:
    """The messages of one read as clients see them, and those left out."""

    messages: list[MessageRecord]
    unreadable: list[Unreadable] = field(default_factory=list)

    @property
    def last_marker(self) -> int | None:
        """Where the next page starts: after every message read, left out or not."""
        markers = [m.marker for m in self.messages] + [u.marker for u in self.unreadable]
        return max(markers) if markers else None


@dataclass(frozen=True, slots=True)
class OpenedClaim(ClaimRecord):
    """A claim as its holder sees it, and the messages left out of it.

    ``messages`` may be empty when every message the claim took was
    unreadable: the claim then delivered nothing (answered as no messages).
    """

    unreadable: list[Unreadable] = field(default_factory=list)


def open_each(cipher: BodyCipher | None, project: str, queue: str,
              records: Sequence[MessageRecord], read: str) -> Opened:
    """``records`` with sealed bodies opened; those that cannot be, left out and logged.

    ``read`` names the read in the log line (``claim``, ``listing``, ...).
    """
    opened: list[MessageRecord] = []
    unreadable: list[Unreadable] = []
    for record in records:
        if not is_sealed(record.body):
            opened.append(record)
            continue
        try:
            body = open_body(cipher, record.body, project, record.id)
        except EncryptionFailure as failure:
            unreadable.append(Unreadable(record.id, record.marker, str(failure)))
            log.error("Left message %s of queue %r (project %r) out of a %s: %s",
                      record.id, queue, project, read, failure)
            continue
        opened.append(dataclasses.replace(record, body=body))
    return Opened(opened, unreadable)


def opened_claim(claim: ClaimRecord, opened: Opened) -> OpenedClaim:
    """``claim`` with the readable messages of ``opened`` and its unreadable ones."""
    return OpenedClaim(claim.id, claim.queue, claim.ttl, claim.grace, claim.created,
                       claim.expires, opened.messages, opened.unreadable)
