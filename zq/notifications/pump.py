"""One subscription's deliveries: its lease, its cursor, its order and its retries.

A step (run by one of the notifier's threads, never two at once for one
subscription): take or renew the lease; with nothing pending, read up to
``queue_depth`` events after the cursor and turn them into notifications;
send them in order, one attempt each, until one fails and waits for a
retry, or the step's time runs out. Once every notification of a read is
done (delivered, refused by the subscriber with a 4xx, or given up after
the retry policy's last retry) the cursor moves past the whole read. So:

- a crash before that re-sends the read's notifications (at least once);
- a subscription whose lease another server took stops here (its new
  holder starts from the stored cursor): each event once per subscriber
  while servers live;
- a failing subscriber waits alone: its retries are a time to look again,
  not a sleeping thread, and other subscriptions' steps run meanwhile;
- nothing is sent to a subscription that is gone: it is read again
  (``reread``) after each read of the log that found something to send for
  it and at the start of each step that resumes sending (a retry, the rest
  of a read), so a DELETE answered before that read stops it there, on any
  server; the list of live subscriptions (refreshed every second) only
  decides which pumps exist.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from zq import retry_policy as retry
from zq.clock import Clock
from zq.config import NotificationsConfig
from zq.encryption import BodyCipher, is_sealed, open_body
from zq.errors import NotFound
from zq.notifications import mail, webhook
from zq.notifications.hosts import AllowedHosts
from zq.notifications.payloads import Fetch, Notification, build
from zq.notifications.subscriptions import Subscription, reread
from zq.storage.base import Storage
from zq.subscriptions import deliverable

log = logging.getLogger("zq.notifications")


@dataclass(frozen=True)
class Report:
    """What happened to one attempt, for metrics (``sent`` or ``failed``)."""

    project: str
    sent: bool


Reporter = Callable[[Report], None]


class Sender:
    """Delivers one notification to one subscriber: a webhook POST or a mail."""

    def __init__(self, config: NotificationsConfig, allowed: AllowedHosts, clock: Clock) -> None:
        self._config = config
        self._allowed = allowed
        self._clock = clock
        self._connections = webhook.Connections()

    def deliver(self, subscription: Subscription, notification: Notification) -> webhook.Outcome:
        """One attempt; whatever goes wrong is a failed attempt, never an exception.

        The API refuses what cannot be sent (zq.subscriptions), but a record
        stored before a check existed must still end by the retry policy, be
        counted and be logged, not raise from every step for ever.
        """
        try:
            return self._deliver(subscription, notification)
        except Exception as exc:
            log.debug("sending to %s raised", subscription.subscriber, exc_info=True)
            return webhook.Outcome(False, None, f"cannot send: {type(exc).__name__}: {exc}")

    def _deliver(self, subscription: Subscription,
                 notification: Notification) -> webhook.Outcome:
        options = subscription.options
        body = json.dumps(notification.payload).encode()
        if subscription.subscriber.startswith("mailto:"):
            c = self._config
            return mail.send(subscription.subscriber, body, queue=subscription.queue,
                             host=c.smtp_host, port=c.smtp_port, sender=c.smtp_from,
                             timeout=c.timeout)
        template = options.get("post_data")
        if isinstance(template, str):
            # Zaqar's post_data: the notification where the template says "$zaqar_message$".
            body = template.replace('"$zaqar_message$"', body.decode()).encode()
        headers = options.get("post_headers")
        headers = {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else {}
        secret = options.get("secret")
        return webhook.post(subscription.subscriber, body, headers, allowed=self._allowed,
                            timeout=self._config.timeout,
                            max_redirects=self._config.max_redirects,
                            secret=secret if isinstance(secret, str) else None,
                            now=self._clock.now(), connections=self._connections)


class MessageReader:
    """Reads a message for its notification (a Fetch), and opens bodies events carry."""

    def __init__(self, storage: Storage, cipher: BodyCipher | None) -> None:
        self._storage = storage
        self._cipher = cipher

    def __call__(self, project: str, queue: str, message_id: str) -> Any:
        """The message with its body opened; None when it is gone."""
        try:
            record = self._storage.messages.get(project, queue, message_id)
        except NotFound:
            return None
        if not is_sealed(record.body):
            return record
        return replace(record, body=open_body(self._cipher, record.body, project, record.id))

    def open(self, project: str, message_id: str, stored: str) -> str:
        """A body as stored (a posted event's zq.events.BODY): sealed ones opened."""
        return open_body(self._cipher, stored, project, message_id) if is_sealed(stored) else stored


def fetcher(storage: Storage, cipher: BodyCipher | None) -> Fetch:
    """Read a message for its notification (its body opened); None when it is gone."""
    return MessageReader(storage, cipher)


def created_at(subscription: Subscription, now: float) -> float:
    """When the subscription was made, as closely as its record tells.

    ``age`` is whole seconds (truncated) at the read, a moment before
    ``now``: the creation lies between ``now - age - 1`` (less that moment)
    and ``now - age``. ``expires - ttl`` is exact when it lies there (a
    PATCH of the ttl since puts it later); otherwise err early, by at most
    two seconds of events from before the subscription.
    """
    latest = now - float(subscription.age)
    earliest = latest - 2.0
    exact = float(subscription.expires) - float(subscription.ttl)
    return exact if earliest <= exact <= latest else earliest


class Pump:
    def __init__(self, storage: Storage, subscription: Subscription, *, owner: str,
                 clock: Clock, config: NotificationsConfig, sender: Sender, fetch: Fetch,
                 report: Reporter) -> None:
        self.storage = storage
        self.subscription = subscription
        self._cursors = storage.notification_cursors
        self._owner = owner
        self._clock = clock
        self._config = config
        self._sender = sender
        self._fetch = fetch
        self._report = report
        self.created = created_at(subscription, clock.now())
        self.next_at = 0.0  # not before this time (a retry's delay)
        self._pending: deque[Notification] = deque()
        self._through: str | None = None
        self._committed: str | None = None
        self._held = False
        self._lease_until = 0.0
        self._attempt = 0
        self._schedule = retry.Schedule.of({})
        self.gone = False  # deleted or expired: nothing more is sent

    def _reset(self, cursor: str | None) -> None:
        self._pending.clear()
        self._through = None
        self._committed = cursor
        self._attempt = 0
        self.next_at = 0.0

    def step(self) -> bool:
        """One step; True when more work is ready at once (a full read, or more to send)."""
        if self.gone:
            return False
        lease_seconds = self._config.lease_seconds
        if not self._held or self._lease_until - self._clock.now() < lease_seconds * 2 / 3:
            # Renewed when a third of it is used up, not on every step: an idle
            # subscription costs a read of the log per poll, not a write too.
            lease = self._cursors.acquire(self.subscription.id, self._owner, lease_seconds)
            if lease is None:
                self._held = False
                self._reset(None)
                return False
            if not self._held or lease.cursor != self._committed:
                self._reset(lease.cursor)  # new to us, or another server moved it meanwhile
            self._held = True
            self._lease_until = lease.until
        full = False
        if not self._pending and self._through is None:
            full = self._read()
        elif self._pending and not self._still_there():
            return False
        deadline = time.monotonic() + lease_seconds / 3
        while self._pending and self._clock.now() >= self.next_at:
            self._attempt_head()
            if time.monotonic() > deadline:
                break
        if not self._pending and self._through is not None:
            if self._through != self._committed:
                if not self._cursors.advance(self.subscription.id, self._owner, self._through,
                                             lease_seconds):
                    self._held = False  # another server took it over: it carries on
                    self._reset(None)
                    return False
                self._lease_until = self._clock.now() + lease_seconds  # advance renewed it
            self._committed, self._through = self._through, None
            return full
        return bool(self._pending) and self._clock.now() >= self.next_at

    def release(self) -> None:
        if self._held:
            self._cursors.release(self.subscription.id, self._owner)
            self._held = False

    def _read(self) -> bool:
        """Read the next events into notifications; True when the read was full."""
        events = self.storage.events.read(after=self._committed, limit=self._config.queue_depth)
        full = len(events) == self._config.queue_depth
        now = self._clock.now()
        if not self.storage.events.final_order:
            # A later commit may still land before the young events (MariaDB,
            # MongoDB without transactions): leave them for the settle window.
            settled_before = now - self._config.settle_seconds
            for index, event in enumerate(events):
                if event.time > settled_before:
                    events, full = events[:index], False
                    break
        # A MessageReader also opens the (sealed) bodies posted events carry.
        opener = {"opener": self._fetch.open} if isinstance(self._fetch, MessageReader) else {}
        batch = build(events, self.subscription, now=now, created=self.created,
                      fetch=self._fetch, **opener)
        if batch.through is None:
            return False
        if batch.notifications and not self._still_there():
            return False
        if not self._may_send():
            batch.notifications = []  # unconfirmed under require_confirmation: dropped
        self._pending.extend(batch.notifications)
        self._through = batch.through
        self._schedule = retry.Schedule.of(retry.effective_policy(
            self.subscription.options, self._queue_metadata()))
        return full

    def _still_there(self) -> bool:
        """Read the subscription again before sending (it may be gone, changed or
        confirmed since the notifier's list was read); False once it is gone."""
        found = reread(self.storage, self.subscription)
        if found is None:
            log.info("subscription %s of %s/%s is gone: nothing more is sent to %s",
                     self.subscription.id, self.subscription.project, self.subscription.queue,
                     self.subscription.subscriber)
            self.gone = True
            self._pending.clear()
            self._through = None
            self.next_at = math.inf  # the runner drops the pump at its next refresh
            return False
        self.subscription = found
        return True

    def _may_send(self) -> bool:
        return deliverable(self.subscription,  # type: ignore[arg-type]
                           require_confirmation=self._config.require_confirmation)

    def _queue_metadata(self) -> dict[str, Any]:
        try:
            return self.storage.queues.get_metadata(self.subscription.project,
                                                    self.subscription.queue)
        except NotFound:
            return {}

    def _attempt_head(self) -> None:
        notification = self._pending[0]
        outcome = self._sender.deliver(self.subscription, notification)
        sent = outcome.delivered and (outcome.status is None or outcome.status < 400)
        self._report(Report(self.subscription.project, sent))
        if outcome.delivered:
            if not sent:
                log.warning("subscriber %s of %s/%s refused a notification: %s",
                            self.subscription.subscriber, self.subscription.project,
                            self.subscription.queue, outcome.detail)
            self._done()
            return
        delay = self._schedule.delay(self._attempt) if outcome.retry else None
        if delay is not None:
            self._attempt += 1
            self.next_at = self._clock.now() + delay
            log.info("notification to %s failed (%s): retry %d in %gs",
                     self.subscription.subscriber, outcome.detail, self._attempt, delay)
            return
        log.error("notification to %s of %s/%s given up after %d retries: %s",
                  self.subscription.subscriber, self.subscription.project,
                  self.subscription.queue, self._attempt, outcome.detail)
        self._done()

    def _done(self) -> None:
        self._pending.popleft()
        self._attempt = 0
        self.next_at = 0.0
