"""The notifier: every backend's live subscriptions, a pump each, a bounded thread pool.

``zq serve`` runs it in a process of its own (zq.notifications.process),
next to granian's workers: no request thread ever waits on a webhook, a
slow or hung subscriber costs one of the notifier's ``concurrency``
threads for at most ``timeout`` seconds, and one notifier per server
process (not per worker) keeps the leases few.

Each tick: refresh the subscriptions of each backend, drop pumps of gone
subscriptions (and their cursors), and hand each pump that is due (not
waiting for a retry, not already running) to the pool, never more at once
than there are threads, the longest waiting first (a pump that starts a
step goes to the back of the line: round-robin). Whatever a step raises (a backend down) is logged
and the pump tried again on a later tick.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from zq.clock import Clock
from zq.config import NotificationsConfig, SignedUrlsConfig
from zq.notifications.confirmations import Confirmations
from zq.notifications.hosts import AllowedHosts
from zq.notifications.payloads import Fetch
from zq.notifications.pump import Pump, Reporter, Sender
from zq.notifications.subscriptions import subscriptions_of
from zq.storage.base import Storage

log = logging.getLogger("zq.notifications")

# How often gone subscriptions' cursors are looked for (seconds): one is
# removed when it is found gone twice in a row.
FORGET_EVERY = 60.0
# How often the list of live subscriptions is read again (seconds): a new
# subscription starts within this. A deleted one stops sooner: its pump
# reads it again before it sends (zq.notifications.pump).
REFRESH_EVERY = 1.0


class Notifier:
    def __init__(
        self,
        storages: Callable[[], Mapping[str, Any]],
        config: NotificationsConfig,
        clock: Clock,
        *,
        fetch_for: Callable[[Storage], Fetch],
        report: Reporter,
        owner: str | None = None,
        allowed: AllowedHosts | None = None,
        signed_urls: SignedUrlsConfig | None = None,
    ) -> None:
        self._storages = storages
        self._config = config
        self._clock = clock
        self._fetch_for = fetch_for
        self._report = report
        self.owner = owner or uuid.uuid4().hex
        self._sender = Sender(config, allowed or AllowedHosts.from_setting(config.allowed_hosts),
                              clock)
        self._pumps: dict[tuple[str, str], Pump] = {}
        self._running: dict[tuple[str, str], Future[bool]] = {}
        self._again: set[tuple[str, str]] = set()
        self._pool = ThreadPoolExecutor(config.concurrency, thread_name_prefix="zq-notify")
        # Confirmation requests (require_confirmation): zq.notifications.confirmations.
        self._confirmations = Confirmations(config, signed_urls or SignedUrlsConfig(), clock,
                                            self._sender, report, self.owner)
        self._forgotten_at = 0.0
        self._orphans: dict[str, set[str]] = {}  # cursor rows without a subscription, by pool
        self._refreshed_at = float("-inf")

    def tick(self) -> int:
        """One round; how many steps it started."""
        self._collect()
        now = self._clock.now()
        if now - self._refreshed_at >= REFRESH_EVERY or now < self._refreshed_at:
            # Not on every tick: a busy notifier ticks every 50 ms.
            self._refresh()
            self._refreshed_at = now
        started = 0
        now = self._clock.now()
        for key, pump in list(self._pumps.items()):
            if len(self._running) >= self._config.concurrency:
                break
            if key in self._running or (pump.next_at > now and key not in self._again):
                continue
            self._again.discard(key)
            self._running[key] = self._pool.submit(pump.step)
            # To the back of the line: an idle subscription is always ready, so
            # a fixed order would give the threads to the first ones for ever.
            del self._pumps[key]
            self._pumps[key] = pump
            started += 1
        room = self._config.concurrency - len(self._running) - self._confirmations.running()
        started += self._confirmations.start(self._pool.submit, room)
        return started

    def busy(self) -> bool:
        """Whether steps are running or pumps have more ready at once."""
        self._collect()
        return bool(self._running or self._again or self._confirmations.running()
                    or self._confirmations.ready())

    def _collect(self) -> None:
        for key, future in list(self._running.items()):
            if not future.done():
                continue
            del self._running[key]
            try:
                if future.result():
                    self._again.add(key)
            except Exception:  # a backend down, say: try again next tick
                log.exception("notifying subscription %s failed; trying again", key[1])

    def _refresh(self) -> None:
        seen: set[tuple[str, str]] = set()
        now = self._clock.now()
        forget = now - self._forgotten_at >= FORGET_EVERY
        for name, storage in self._storages().items():
            if not isinstance(storage, Storage):
                continue
            controller = subscriptions_of(storage)
            if controller is None:
                continue
            try:
                live = controller.live()
            except Exception:
                log.exception("reading the subscriptions of pool %s failed", name)
                seen.update(k for k in self._pumps if k[0] == name)
                continue
            for subscription in live:
                key = (name, subscription.id)
                seen.add(key)
                pump = self._pumps.get(key)
                if pump is None:
                    self._pumps[key] = Pump(
                        storage, subscription, owner=self.owner, clock=self._clock,
                        config=self._config, sender=self._sender,
                        fetch=self._fetch_for(storage), report=self._report)
                else:
                    pump.subscription = subscription  # options may have changed
            self._confirmations.refresh(name, storage, live)
            if forget:
                # A row without a live subscription two rounds running: a new
                # subscription's cursor is written just before the subscription
                # (zq.subscriptions), and may be read between the two.
                ids = {s.id for s in live} | self._confirmations.keys(live)
                orphans = set(storage.notification_cursors.positions()) - ids
                for gone in orphans & self._orphans.get(name, set()):
                    storage.notification_cursors.forget(gone)
                self._orphans[name] = orphans
        if forget:
            self._forgotten_at = now
        for key in set(self._pumps) - seen:
            if key not in self._running:
                del self._pumps[key]

    def run(self, stop: threading.Event) -> None:
        """Tick until ``stop`` is set; idle ticks ``poll_interval`` apart."""
        while not stop.is_set():
            self.tick()
            if not self.busy() or not self._again:
                stop.wait(self._config.poll_interval if not self._running else 0.05)

    def close(self) -> None:
        """Wait for the steps in flight, then give every lease up for others to take."""
        self._pool.shutdown(wait=True)
        for pump in self._pumps.values():
            try:
                pump.release()
            except Exception:
                log.exception("releasing subscription %s failed", pump.subscription.id)
