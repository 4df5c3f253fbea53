"""Confirmation requests (Zaqar's ``require_confirmation``), sent by the notifier.

With ``[notifications] require_confirmation = true`` an unconfirmed
subscriber gets nothing but a request to confirm: a POST (or a mail) of
Zaqar's ``SubscriptionConfirmation`` message carrying a pre-signed URL that
allows exactly ``PUT /v2/queues/{q}/subscriptions/{id}/confirm``. After
``{"confirmed": false}`` it gets Zaqar's ``UnsubscribeConfirmation``.

Durable and shared without a new table: each request is a row of the
notification cursors (``NotificationCursors``) under the key
``confirm:<subscription id>``, whose cursor is the request's state:

- no row, or cursor None: a confirmation request is due (so a subscription
  made on a server that does not ask, or before the setting was turned on,
  gets one too);
- ``unsubscribe``: an unsubscribe notice is due (written by the API);
- ``sent`` / ``given-up``: nothing is due.

The notifier takes the row's lease before sending and writes ``sent`` only
after the subscriber answered, so: once per subscription across servers
(the lease), at least once across crashes (a dead holder's lease runs out
and another server sends again). Failures retry on the subscription's
``_retry_policy`` schedule, as notifications do (Zaqar sends confirmations
once, without retries), then give up (``given-up``, logged). A repeated
create of an unconfirmed subscription removes the row: a new request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from zq import retry_policy as retry
from zq.auth import signed_urls
from zq.clock import Clock
from zq.config import NotificationsConfig, SignedUrlsConfig
from zq.notifications.confirmation_requests import DONE, GIVEN_UP, SENT, UNSUBSCRIBE, key
from zq.notifications.payloads import Notification
from zq.notifications.pump import Report, Reporter, Sender
from zq.notifications.subscriptions import Subscription
from zq.storage.base import Storage

log = logging.getLogger("zq.notifications")

SUBSCRIPTION_CONFIRMATION = "SubscriptionConfirmation"
UNSUBSCRIBE_CONFIRMATION = "UnsubscribeConfirmation"
API_VERSION = "v2"


def confirm_path(queue: str, subscription_id: str) -> str:
    return f"/{API_VERSION}/queues/{queue}/subscriptions/{subscription_id}/confirm"


def payload(subscription: Subscription, *, unsubscribed: bool, signing_key: str,
            max_expires: int, now: float, public_url: str = "") -> dict[str, Any]:
    """Zaqar's confirmation message, its URL signed for PUT on the confirm path only.

    The signature lasts as long as the subscription, at most ``max_expires``.
    """
    path = confirm_path(subscription.queue, subscription.id)
    expires_at = min(float(subscription.expires), now + max_expires)
    if expires_at <= now:
        expires_at = now + max_expires
    signed = signed_urls.sign_paths(signing_key, [path], ["PUT"], subscription.project,
                                    expires_at=expires_at)
    queue = subscription.queue
    message: dict[str, Any] = {}
    if public_url:
        message["WSGISubscribeURL"] = public_url.rstrip("/") + path
    if unsubscribed:
        kind = UNSUBSCRIBE_CONFIRMATION
        text = (f"You have unsubscribed successfully to the queue: {queue}, "
                "you can resubscribe it by using confirmed=True.")
    else:
        kind = SUBSCRIPTION_CONFIRMATION
        text = f"You have chosen to subscribe to the queue: {queue}"
    message.update({
        "Message_Type": kind, "Message": text,
        "URL-Signature": signed.signature, "URL-Methods": signed.methods[0],
        "URL-Paths": signed.paths[0], "X-Project-ID": signed.project,
        "URL-Expires": signed.expires,
        "SubscribeBody": {"confirmed": True}, "UnsubscribeBody": {"confirmed": False},
        "queue_name": queue,  # Zaqar's webhook task adds it to every message
    })
    return message


@dataclass
class _Job:
    storage: Storage
    subscription: Subscription
    next_at: float = 0.0
    attempt: int = 0
    schedule: retry.Schedule | None = None


class Confirmations:
    """The notifier's part: find due requests on each refresh, send them on its pool."""

    def __init__(self, config: NotificationsConfig, signed: SignedUrlsConfig, clock: Clock,
                 sender: Sender, report: Reporter, owner: str) -> None:
        self._config = config
        self._signed = signed
        self._clock = clock
        self._sender = sender
        self._report = report
        self._owner = owner
        self._jobs: dict[tuple[str, str], _Job] = {}
        self._running: dict[tuple[str, str], Future[None]] = {}
        self._warned = False

    @property
    def enabled(self) -> bool:
        return self._config.require_confirmation

    def keys(self, live: list[Any]) -> set[str]:
        """The cursor rows the live subscriptions' requests use (not to be forgotten)."""
        return {key(s.id) for s in live}

    def refresh(self, name: str, storage: Storage, live: list[Any]) -> None:
        """Note which of ``live`` need a request (one read of the rows)."""
        if not self.enabled:
            return
        if not self._signed.secret_key:
            if not self._warned:
                log.error("notifications: require_confirmation is on but [signed_urls] "
                          "secret_key is empty: no confirmation request can be signed, "
                          "unconfirmed subscribers get nothing")
                self._warned = True
            return
        positions = storage.notification_cursors.positions()
        due = set()
        for subscription in live:
            if subscription.confirmed:
                continue
            state = positions.get(key(subscription.id))
            if state in DONE:
                continue
            job_key = (name, subscription.id)
            due.add(job_key)
            job = self._jobs.get(job_key)
            if job is None:
                self._jobs[job_key] = _Job(storage, subscription)
            else:
                job.subscription = subscription
        for job_key in set(self._jobs) - due:
            if job_key[0] == name and job_key not in self._running:
                del self._jobs[job_key]

    def start(self, submit: Callable[..., Future[None]], room: int) -> int:
        """Submit up to ``room`` due requests; how many."""
        self._collect()
        started = 0
        now = self._clock.now()
        for job_key, job in list(self._jobs.items()):
            if started >= room:
                break
            if job_key in self._running or job.next_at > now:
                continue
            self._running[job_key] = submit(self._send, job_key, job)
            started += 1
        return started

    def running(self) -> int:
        self._collect()
        return len(self._running)

    def ready(self) -> bool:
        """Whether a request waits to be sent now (a retry without delay, say)."""
        now = self._clock.now()
        return any(k not in self._running and job.next_at <= now
                   for k, job in self._jobs.items())

    def _collect(self) -> None:
        for job_key, future in list(self._running.items()):
            if not future.done():
                continue
            del self._running[job_key]
            try:
                future.result()
            except Exception:  # a backend down: the next refresh finds it again
                log.exception("confirmation request of subscription %s failed; trying again",
                              job_key[1])

    def _send(self, job_key: tuple[str, str], job: _Job) -> None:
        cursors = job.storage.notification_cursors
        assert cursors is not None
        row = key(job.subscription.id)
        lease = cursors.acquire(row, self._owner, self._config.lease_seconds)
        if lease is None or lease.cursor in DONE:
            self._jobs.pop(job_key, None)  # another server has it, or it is done
            return
        subscription = job.subscription
        now = self._clock.now()
        message = payload(subscription, unsubscribed=lease.cursor == UNSUBSCRIBE,
                          signing_key=self._signed.secret_key,
                          max_expires=self._signed.max_expires, now=now,
                          public_url=self._config.public_url)
        outcome = self._sender.deliver(subscription, Notification(message["Message_Type"],
                                                                   message))
        sent = outcome.delivered and (outcome.status is None or outcome.status < 400)
        self._report(Report(subscription.project, sent))
        if not outcome.delivered:
            if job.schedule is None or job.attempt == 0:
                job.schedule = retry.Schedule.of(retry.effective_policy(
                    subscription.options, {}))
            delay = job.schedule.delay(job.attempt) if outcome.retry else None
            if delay is not None:
                job.next_at = now + delay
                job.attempt += 1
                log.info("confirmation request to %s failed (%s): retry %d",
                         subscription.subscriber, outcome.detail, job.attempt)
                return  # the lease is kept (renewed by the next acquire)
            log.error("confirmation request to %s of %s/%s given up: %s",
                      subscription.subscriber, subscription.project, subscription.queue,
                      outcome.detail)
        elif not sent:
            log.warning("subscriber %s refused its confirmation request: %s",
                        subscription.subscriber, outcome.detail)
        state = SENT if outcome.delivered else GIVEN_UP
        if not cursors.advance(row, self._owner, state, self._config.lease_seconds):
            # Taken over (our lease ran out) or removed by a new request: the
            # next refresh decides again from the stored row.
            log.info("confirmation request of %s: row changed meanwhile", subscription.id)
        self._jobs.pop(job_key, None)
