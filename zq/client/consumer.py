"""``Consumer``: the claim, handle, delete loop, done right.

Per batch: claim up to ``batch`` messages; call the handler on each; on
success delete it, on an exception reject it with ``"Type: message"`` as
the description (terminal, to the dead letter queue, for the exception
types given as ``permanent``; a retry otherwise, after the queue's backoff
or ``retry_after``). A background thread renews the claim while the
handler runs, so a slow handler never loses its messages to another
consumer. Backoff between deliveries is the server's (the queue's
``_retry_*`` metadata): a retry reject leaves the wait to it unless
``retry_after`` is given. An empty queue, or a server that cannot answer,
is polled with an exponential idle wait (no busy loop). ``stop()`` (SIGTERM
and SIGINT while ``run`` runs in the main thread) lets the current message
finish, releases the rest of the claim and returns: no message is lost or
left held.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from zq.client.errors import (
    Conflict,
    NotFound,
    ServerError,
    Suspected,
    TransportError,
    ZqClientError,
)
from zq.client.http import Client
from zq.client.models import Claim, Message

log = logging.getLogger("zq.client")

# The server's cap on a reject description (API.md).
MAX_DESCRIPTION = 1024

Handler = Callable[[Message], Any]


@dataclass
class ConsumerStats:
    """What a run did, for logs and tests."""

    claims: int = 0
    handled: int = 0  # handler returned: deleted
    rejected: int = 0  # terminal rejects (dead lettered)
    retried: int = 0  # retry rejects
    released: int = 0  # left unhandled in a claim released on stop
    renewals: int = 0
    idle_waits: int = 0


def describe(exc: BaseException) -> str:
    """``"Type: message"``, cut to what the server keeps."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 3] + "..."


class IdleWait:
    """Exponential waits between empty claims: ``low``, 2x, 4x ... up to ``high``."""

    def __init__(self, low: float, high: float) -> None:
        self.low, self.high = low, high
        self._next = low

    def next(self) -> float:
        wait = self._next
        self._next = min(self.high, self._next * 2)
        return wait

    def reset(self) -> None:
        self._next = self.low


class _Renewer:
    """Renews a claim every ``interval`` seconds in a thread until stopped."""

    def __init__(self, consumer: Consumer, claim: Claim) -> None:
        self._consumer = consumer
        self._claim = claim
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zq-claim-renewer",
                                        daemon=True)

    def __enter__(self) -> _Renewer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        c = self._consumer
        while not self._done.wait(c.renew_interval):
            try:
                c.client.renew(c.queue, self._claim.id, ttl=c.claim_ttl, grace=c.grace)
                c.stats.renewals += 1
            except NotFound:
                log.warning("claim %s expired before it could be renewed", self._claim.id)
                return
            except ZqClientError as exc:  # a blip: the next renewal may succeed
                log.warning("renewing claim %s failed: %s", self._claim.id, exc)


class Consumer:
    """Claims from ``queue`` and calls ``handler(message)`` per message until stopped.

    ``permanent``: exception types after which a message is dead lettered
    at once (terminal reject); any other exception asks for a retry. A
    queue without a dead letter queue refuses a terminal reject (409): the
    message is then rejected for a retry instead, never dropped.
    ``sleep`` and ``clock`` are injectable for tests; by default waits end
    early when ``stop()`` is called.
    """

    def __init__(
        self,
        url: str,
        queue: str,
        handler: Handler,
        *,
        project: str,
        client_id: str | None = None,
        token: str | None = None,
        batch: int = 10,
        claim_ttl: int = 60,
        grace: int = 60,
        permanent: tuple[type[BaseException], ...] = (),
        retry_after: int | None = None,
        renew_interval: float | None = None,
        idle_wait: tuple[float, float] = (0.5, 30.0),
        client: Client | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client or Client(url, project=project, client_id=client_id, token=token)
        self.queue = queue
        self.handler = handler
        self.batch = batch
        self.claim_ttl = claim_ttl
        self.grace = grace
        self.permanent = permanent
        self.retry_after = retry_after
        # A third of the ttl: two renewals may fail before the claim lapses.
        self.renew_interval = renew_interval if renew_interval is not None else claim_ttl / 3
        self.idle = IdleWait(*idle_wait)
        self.clock = clock
        self.stats = ConsumerStats()
        self._stopping = threading.Event()
        self._sleep = sleep or self._stopping.wait

    # -- control ----------------------------------------------------------

    def stop(self) -> None:
        """Finish the current message, release the rest of the claim, return from run."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def run(self, *, max_batches: int | None = None, until_empty: bool = False,
            handle_signals: bool = True) -> ConsumerStats:
        """Consume until ``stop()``, SIGTERM/SIGINT (``handle_signals``, main thread
        only), ``max_batches`` claims, or (``until_empty``) the queue is empty.

        Empty means nothing is left that could still be delivered: the
        queue's stats show no message at all, neither free (delayed ones
        included: a retry waiting for its backoff, a post's delay) nor
        claimed (another consumer's claim may end in a release, a lapse or
        a retry). Until then an empty claim is followed by the idle wait.
        """
        restore = self._install_signals() if handle_signals else {}
        try:
            batches = 0
            while not self.stopping and (max_batches is None or batches < max_batches):
                claim = self._claim()
                if claim is None:
                    if until_empty and self._empty():
                        break
                    self.stats.idle_waits += 1
                    self._sleep(self.idle.next())
                    continue
                batches += 1
                self.process(claim)
            return self.stats
        finally:
            for signum, previous in restore.items():
                signal.signal(signum, previous)

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}

        def on_signal(signum: int, frame: FrameType | None) -> None:
            log.info("signal %d: stopping after the current message", signum)
            self.stop()

        previous = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, on_signal)
        return previous

    # -- one batch --------------------------------------------------------

    def _claim(self) -> Claim | None:
        """One claim; None when nothing was free (the caller waits)."""
        try:
            try:
                claim = self._claim_once()
            except Suspected as suspected:
                # This Client-ID let a claim lapse (a stall): show it is alive
                # by releasing that claim (its messages went back long ago),
                # then claim again; suspected again, wait as for an empty queue.
                log.warning("suspected for lapsed claim %s: releasing it",
                            suspected.lapsed_claim_id)
                self._release_id(suspected.lapsed_claim_id)
                claim = self._claim_once()
        except Suspected:
            claim = None
        except (ServerError, TransportError) as exc:
            # The server is down or restarting: wait as for an empty queue.
            log.warning("claiming from %s failed: %s", self.queue, exc)
            return None
        if claim is None or not claim.messages:
            return None
        self.idle.reset()
        self.stats.claims += 1
        return claim

    def _empty(self) -> bool:
        """No message left in the queue, free, delayed or claimed (``until_empty``)."""
        try:
            stats = self.client.stats(self.queue)
        except (ServerError, TransportError) as exc:
            # Unknown is not empty: wait as for a failed claim.
            log.warning("reading the stats of %s failed: %s", self.queue, exc)
            return False
        return stats.total == 0

    def _claim_once(self) -> Claim | None:
        return self.client.claim(self.queue, limit=self.batch, ttl=self.claim_ttl,
                                 grace=self.grace)

    def process(self, claim: Claim) -> None:
        """Handle each message of ``claim``; on stop, release what is left."""
        with _Renewer(self, claim):
            for index, message in enumerate(claim.messages):
                if self.stopping:
                    self.stats.released += len(claim.messages) - index
                    self._release(claim)
                    return
                self._handle(claim, message)

    def _handle(self, claim: Claim, message: Message) -> None:
        try:
            self.handler(message)
        except Exception as exc:  # every failure is reported to the server
            self._reject(claim, message, exc)
            return
        try:
            self.client.delete_message(self.queue, message.id, claim_id=claim.id)
            self.stats.handled += 1
        except ZqClientError as exc:
            # The claim lapsed (handled twice is possible: at-least-once).
            log.warning("deleting message %s failed: %s", message.id, exc)

    def _reject(self, claim: Claim, message: Message, exc: Exception) -> None:
        description = describe(exc)
        terminal = isinstance(exc, self.permanent)
        try:
            if terminal:
                try:
                    self.client.reject(self.queue, message.id, claim.id,
                                       description=description)
                    self.stats.rejected += 1
                    return
                except Conflict:
                    log.warning("queue %s has no dead letter queue: retrying message %s",
                                self.queue, message.id)
            self.client.reject(self.queue, message.id, claim.id, description=description,
                               retry=True, retry_after=self.retry_after)
            self.stats.retried += 1
        except ZqClientError as err:
            # The claim lapsed: the message is free again and will come back.
            log.warning("rejecting message %s failed: %s", message.id, err)

    def _release(self, claim: Claim) -> None:
        self._release_id(claim.id)

    def _release_id(self, claim_id: str) -> None:
        try:
            self.client.release(self.queue, claim_id)
        except ZqClientError as exc:
            # The claim's messages come back when it expires anyway.
            log.warning("releasing claim %s failed: %s", claim_id, exc)
