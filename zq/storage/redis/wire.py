"""What goes into the scripts (arguments) and comes out (records)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zq.errors import MetadataChanged
from zq.poison import moves
from zq.poison.backoff import BackoffPolicy
from zq.poison.breaker import stored_description
from zq.poison.dead_letter import DeadLetterPolicy, expiry_move_from_metadata
from zq.poison.moves import Move
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import MessageRecord

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
    (mid, body, ttl, created, expires, client, claim, count, hist, marker, redrives,
     forgiven, last_failure, lapsed_with, lapses) = row
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
        history=history(hist, lapses),
        marker=int(marker),
        redrive_count=int(redrives),
        forgiven_count=int(forgiven),
        last_failure=last_failure or None,
        lapsed_with=tuple(json.loads(lapsed_with)) if lapsed_with else (),
    )


def history(moved: str, lapses: str) -> list[dict[str, Any]]:
    """The message's history: its move entries (field ``hist``, a JSON list)
    and its lapse entries (field ``lh``, one JSON object per line, kept apart
    so that a script bounds them without rewriting the moves), by time; a
    lapse before a move of the same time, as the lapse is seen first."""
    # Most messages were never moved: json.loads("[]") is about 1 us a
    # message, a tenth of a claim's decoding.
    entries: list[dict[str, Any]] = [] if moved == "[]" else json.loads(moved)
    if not lapses:
        return entries
    timed = [(float(e[moves.TIME]), 1, e) for e in entries]
    timed += [(float(e[moves.TIME]), 0, e) for e in map(json.loads, lapses.split("\n"))]
    return [e for _, _, e in sorted(timed, key=lambda t: t[:2])]


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


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# How many arguments move_args gives (``read_move`` in lua/_lib.lua).
MOVE_ARGS = 7


def move_args(move: Move, source: str, now: float) -> list[str]:
    """The MOVE_ARGS arguments ``read_move`` in lua/_lib.lua expects.

    Every value comes from zq.poison.moves: the destination, the ttl (empty: each
    message keeps its own), the history entry, the event kind and the
    fixed part of its detail (the script adds each message's fingerprint
    and sample under zq.events' names), the counts to reset or raise. The
    script only applies them.
    """
    ttl = "" if move.ttl is None else str(int(move.ttl))
    return [move.to, ttl, compact_json(move.history_entry(source, now)), move.event,
            compact_json(move.detail), flag(move.reset_claim_count), flag(move.count_redrive)]


def policy_args(policy: DeadLetterPolicy | None, source: str, now: float) -> list[str]:
    """The 1 + MOVE_ARGS arguments ``read_policy`` in lua/_lib.lua expects.

    The threshold of ``policy.is_exhausted`` (take_batch moves a message
    whose claim count is at least it), then its move; all empty without a
    policy or a threshold. Expired messages are the queue's own setting
    (``expiry_arg``), applied whenever the queue is settled.
    """
    if policy is None or policy.max_claim_count is None:
        return [""] * (1 + MOVE_ARGS)
    return [str(policy.max_claim_count), *move_args(policy.move, source, now)]


# How many arguments breaker_args gives (``read_rules`` in lua/_breaker.lua).
BREAKER_ARGS = 7


def breaker_args(rules: DeliveryRules) -> list[str]:
    """The BREAKER_ARGS arguments ``read_rules`` in lua/_breaker.lua expects.

    The queue's breaker policy (zq.poison.breaker; all empty without one)
    and whether lapses are blamed (``rules.blame_split``): the scripts
    carry out the rules of zq.storage.breakers and zq.poison.blame.
    """
    policy = rules.breaker
    blame = flag(rules.blame_split)
    if policy is None:
        return ["", "", "", "", "", "", blame]
    return [repr(float(policy.failure_ratio)), str(policy.min_failures), str(policy.window),
            str(policy.probe_interval), str(policy.close_after), str(policy.auto_redrive_max),
            blame]


def description_args(description: str | None) -> list[str]:
    """A failure's description as two script arguments: present ('1'), its stored text."""
    if description is None:
        return ["", ""]
    return ["1", stored_description(description) or ""]


def backoff_args(backoff: BackoffPolicy | None, limit: int) -> list[str]:
    """The two arguments ``read_backoff`` in lua/_lib.lua expects.

    The delays by claim count and one jitter factor per message the claim
    may deliver, all from zq.poison.backoff: the script only looks them up.
    """
    if backoff is None:
        return ["", ""]
    factors = [backoff.jitter_factor() for _ in range(limit)]
    return [_json_floats(backoff.schedule()), _json_floats(factors)]


def _json_floats(values: list[float]) -> str:
    # repr keeps every bit of a float; cjson reads it back exactly.
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def expiry_arg(queue: str, metadata: Mapping[str, Any]) -> str:
    """The queue's expiry move as its hash keeps it (``xmove``; '' = none).

    Decided by zq.poison.dead_letter from the metadata being written, and kept
    with it, so that every script that settles the queue (``sweep`` in
    lua/_lib.lua) moves its expired messages instead of removing them. A
    JSON array of the values ``move_args`` gives, its history entry
    without the time (the script adds ``"time"``: the moment it moves).
    """
    move = expiry_move_from_metadata(metadata)
    if move is None:
        return ""
    entry = move.history_entry(queue, 0.0)
    del entry[moves.TIME]
    args = move_args(move, queue, 0.0)
    args[2] = compact_json(entry)
    return compact_json(args)
