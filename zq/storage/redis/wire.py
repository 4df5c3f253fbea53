"""What goes into the scripts (arguments) and comes out (records)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from zq.dead_letter import DeadLetterPolicy
from zq.errors import MetadataChanged
from zq.events import SAMPLE_CHARS
from zq.storage.base import MessageRecord

# What a script answers when the caller's metadata version is stale.
STALE = -1

# What a script answers when its work budget ran out before it could answer
# (lua/_lib.lua): the caller runs it again, a read script after settling
# the queue.
AGAIN = -2


@dataclass(frozen=True)
class Budget:
    """The most work one script call does, so none grows with a queue's size.

    ``work``: messages written one by one (expired ones removed, exhausted
    ones dead lettered); ``promote``: messages moved in bulk from held or
    waiting to ready once their time has come; ``skip``: messages a list
    page reads and leaves out (its filters), a cheap read each.
    """

    work: int = 100
    promote: int = 1000
    skip: int = 1000

    def args(self) -> list[int]:
        """The two arguments ``read_budget`` in lua/_lib.lua expects."""
        return [self.work, self.promote]


def message_record(queue: str, row: list[Any]) -> MessageRecord:
    """One message as returned by ``record()`` in lua/_lib.lua."""
    mid, body, ttl, created, expires, client, claim, count, hist, marker = row
    return MessageRecord(
        id=mid,
        queue=queue,
        body=body,
        ttl=int(ttl),
        created=float(created),
        expires=float(expires),
        client_id=client or None,
        claim_id=claim or None,
        claim_count=int(count),
        history=json.loads(hist),
        marker=int(marker),
    )


def message_records(queue: str, rows: list[Any]) -> list[MessageRecord]:
    return [message_record(queue, row) for row in rows]


def optional(value: str | None) -> str:
    """None as the empty string the scripts read as 'absent'."""
    return "" if value is None else value


def version_arg(version: str | None) -> str:
    """A version a script checks (metadata or links; "-": none given, not checked)."""
    return "-" if version is None else version


def check_fresh(answer: Any) -> Any:
    """A script's answer, or MetadataChanged when it answered STALE (lua/_lib.lua)."""
    if answer == STALE:
        raise MetadataChanged("The queue's metadata changed; read it again.")
    return answer


def flag(value: bool) -> str:
    return "1" if value else ""


def policy_args(policy: DeadLetterPolicy | None, source: str, now: float) -> list[str]:
    """The six arguments ``read_policy`` in lua/_lib.lua expects.

    Every decision comes from zq.dead_letter: the threshold, the target,
    the ttl (empty: the message keeps its own) and the history entry; the
    script only applies them.
    """
    if policy is None:
        return ["", "", "", "", "", ""]
    entry = json.dumps(policy.history_entry(source, now), separators=(",", ":"))
    ttl = "" if policy.ttl is None else str(int(policy.ttl))
    return [str(policy.max_claim_count), policy.queue, ttl, policy.reason, entry,
            str(SAMPLE_CHARS)]
