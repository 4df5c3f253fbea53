"""Messages on Redis: one hash per message, ordered per queue by marker."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zq import events
from zq.errors import ClaimMismatch, MessageIsClaimed, MessageNotFound
from zq.poison import moves
from zq.poison.moves import Move
from zq.storage.base import MessageController
from zq.storage.delivery_rules import NO_RULES, DeliveryRules
from zq.storage.records import MessageRecord, NewMessage
from zq.storage.redis.controller import RedisController
from zq.storage.redis.settle import read_settled, run_until_done
from zq.storage.redis.wire import (
    breaker_args,
    check_fresh,
    compact_json,
    description_args,
    flag,
    message_records,
    move_args,
    optional,
    policy_args,
    version_arg,
)

# delete.lua's answers besides 0 (done, or nothing to do).
_CLAIMED = 1
_MISMATCH = 2
# reject.lua's answer for a missing or expired message.
_MISSING = 1


class RedisMessages(RedisController, MessageController):
    def post(
        self,
        project: str,
        queue: str,
        messages: Sequence[NewMessage],
        *,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> list[str]:
        ids = [message.id or self.new_id() for message in messages]
        args: list[Any] = [project, queue, optional(client_id),
                           version_arg(rules.metadata_version)]
        for mid, message in zip(ids, messages, strict=True):
            args += [mid, message.body, int(message.ttl), int(message.delay),
                     message.fingerprint, flag(message.event_body)]
        if ids:
            check_fresh(self._run("post", *args))
        return ids

    def list(
        self,
        project: str,
        queue: str,
        *,
        marker: int | None = None,
        limit: int = 10,
        echo: bool = False,
        client_id: str | None = None,
        include_claimed: bool = False,
        include_delayed: bool = False,
    ) -> list[MessageRecord]:
        found: list[MessageRecord] = []
        after = "" if marker is None else str(int(marker))
        while True:
            # A call skips at most budget.skip filtered messages; it then says
            # where to go on from, and the page is completed by the next.
            resume, *rows = read_settled(
                self._scripts, self._clock, self._budget, "list", project, queue,
                after, limit - len(found), flag(echo), optional(client_id),
                flag(include_claimed), flag(include_delayed), self._budget.skip,
            )
            found += message_records(queue, rows)
            if not resume or len(found) >= limit:
                return found
            after = resume

    def get(self, project: str, queue: str, message_id: str) -> MessageRecord:
        found = self.get_many(project, queue, [message_id])
        if not found:
            raise MessageNotFound.gone(message_id)
        return found[0]

    def get_many(
        self, project: str, queue: str, message_ids: Sequence[str]
    ) -> list[MessageRecord]:
        if not message_ids:
            return []
        rows = self._run("get_many", project, queue, *message_ids)
        return sorted(message_records(queue, rows), key=lambda m: m.marker)

    def delete(
        self,
        project: str,
        queue: str,
        message_id: str,
        *,
        claim_id: str | None,
        client_id: str | None,
        settle_claim: bool = False,
        rules: DeliveryRules = NO_RULES,
    ) -> None:
        answer = self._run("delete", project, queue, message_id, optional(claim_id),
                           optional(client_id), "1" if settle_claim else "",
                           *breaker_args(rules))
        # delete.lua applies zq.storage.checks.check_delete's rule atomically.
        if answer == _CLAIMED:
            raise MessageIsClaimed.of(message_id)
        if answer == _MISMATCH and claim_id is not None:
            raise ClaimMismatch.of(claim_id, message_id)

    def delete_many(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        *,
        claim_ids: Sequence[str] | None = None,
        client_id: str | None,
        settle_claims: bool = False,
        rules: DeliveryRules = NO_RULES,
    ) -> list[str]:
        if not message_ids:
            return []
        allowed = ["*"] if claim_ids is None else list(claim_ids)
        return self._run("delete_many", project, queue, optional(client_id),
                         *breaker_args(rules), "1" if settle_claims else "",
                         len(message_ids), *message_ids, *allowed)

    def reject(
        self,
        project: str,
        queue: str,
        message_id: str,
        *,
        claim_id: str,
        client_id: str | None,
        description: str | None,
        retry_after: int | None,
        rules: DeliveryRules = NO_RULES,
    ) -> None:
        detail = events.rejected_detail(description, retry_after)
        answer = self._run("reject", project, queue, message_id, claim_id, optional(client_id),
                           "" if retry_after is None else int(retry_after), compact_json(detail),
                           *description_args(description), *breaker_args(rules))
        if answer == _MISSING:
            raise MessageNotFound.gone(message_id)
        if answer == _MISMATCH:
            raise ClaimMismatch.of(claim_id, message_id)

    def _move(
        self,
        project: str,
        queue: str,
        message_ids: Sequence[str],
        move: Move,
        *,
        claim_id: str | None = None,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> list[str]:
        now = self._clock.now()
        # A terminal reject: a failure for the breaker, held as a retry
        # reject (with this event detail) while it is open.
        terminal = claim_id is not None and move.reason == moves.REASON_REJECTED
        held = events.rejected_detail(move.description, None, held=True)
        # move.lua applies zq.storage.checks.check_move's rule atomically.
        status, *found = self._scripts.run(
            "move", now, project, queue, optional(claim_id), optional(client_id),
            *move_args(move, queue, now), *breaker_args(rules), flag(terminal),
            *description_args(move.description), compact_json(held), *message_ids)
        if status == _MISMATCH and claim_id is not None:
            raise ClaimMismatch.of(claim_id, found[0])
        return list(found)

    def pop(
        self,
        project: str,
        queue: str,
        *,
        limit: int,
        client_id: str | None,
        rules: DeliveryRules = NO_RULES,
    ) -> list[MessageRecord]:
        _, rows = run_until_done(self._scripts, self._clock, "pop", lambda now: [
            project, queue, limit, optional(client_id),
            *policy_args(rules.dead_letter, queue, now),
            version_arg(rules.metadata_version), *self._budget.args(), *breaker_args(rules),
        ])
        return message_records(queue, check_fresh(rows))
