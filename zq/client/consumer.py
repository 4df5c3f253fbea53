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
from zq.client.models import Claim, ClaimAnswer, Message

log = logging.getLogger("zq.client")

# The server's cap on a reject description (API.md).
MAX_DESCRIPTION = 1024
# Seconds a claim asks zq to wait for a message by default: the server's
# default ``[limits] max_claim_wait`` (and SQS's longest WaitTimeSeconds).
DEFAULT_WAIT = 20.0
# An empty answer without zq's X-Zq-Wait header that came back in less than
# this share of the wait asked was not held: after EARLY_EMPTY_LIMIT of them
# the server is taken to ignore ``wait`` (Zaqar) and the consumer polls.
EARLY_SHARE = 0.5
EARLY_EMPTY_LIMIT = 2

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
    long_polls: int = 0  # claims that asked the server to wait


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


class _StopWaiting(BaseException):
    """Raised by the signal handler to cut a waiting claim short (never escapes run)."""


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
    ``wait``: seconds each claim asks zq to hold the request while the
    queue has nothing to claim (a long poll; at most the server's ``[limits]
    max_claim_wait``); 0 polls with ``idle_wait`` instead. Against a server
    that ignores it (Zaqar) the consumer falls back to polling by itself
    (``long_polling`` turns False; see the module's docstring).
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
        wait: float = DEFAULT_WAIT,
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
        if wait < 0:
            raise ValueError("wait must not be negative")
        self.wait = wait
        # None: not known yet; True: the server said it waits (X-Zq-Wait);
        # False: it ignores wait, poll instead.
        self.server_waits: bool | None = None if wait > 0 else False
        self._early_empty = 0
        self.clock = clock
        self.stats = ConsumerStats()
        self._stopping = threading.Event()
        self._sleep = sleep or self._stopping.wait
        self._in_wait = False  # a waiting claim the signal handler may cut short

    # -- control ----------------------------------------------------------

    def stop(self) -> None:
        """Finish the current message, release the rest of the claim, return from run."""
        self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    @property
    def long_polling(self) -> bool:
        """Whether claims ask the server to wait (False once it showed it ignores wait)."""
        return self.server_waits is not False

    def run(self, *, max_batches: int | None = None, until_empty: bool = False,
            handle_signals: bool = True) -> ConsumerStats:
        """Consume until ``stop()``, SIGTERM/SIGINT (``handle_signals``, main thread
        only), ``max_batches`` claims, or (``until_empty``) the queue is empty.

        Empty means nothing is left that could still be delivered: the
        queue's stats show no message at all, neither free (delayed ones
        included: a retry waiting for its backoff, a post's delay) nor
        claimed (another consumer's claim may end in a release, a lapse or
        a retry). Until then an empty claim is followed by a waiting claim
        (or the idle wait when polling); ``until_empty`` asks the server to
        wait only once the stats showed something is left, so that it
        returns as soon as the queue is empty.
        """
        restore = self._install_signals() if handle_signals else {}
        try:
            batches = 0
            busy = not until_empty  # something left that a waiting claim may get
            while not self.stopping and (max_batches is None or batches < max_batches):
                claim, held = self._claim(self.wait if busy and self.long_polling else 0)
                if claim is None:
                    if until_empty:
                        if self._empty():
                            break
                        if not busy and self.long_polling:
                            busy = True  # the next claim waits for what is left
                            continue
                    if not held:  # answered at once: do not spin on it
                        self.stats.idle_waits += 1
                        self._sleep(self.idle.next())
                    continue
                busy = not until_empty
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
            if self._in_wait:
                # The main thread sits in a claim the server holds for up to
                # ``wait`` seconds: leave it now (the server makes no claim
                # for a client that has gone, or releases the one it made).
                raise _StopWaiting

        previous = {}
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, on_signal)
        return previous

    # -- one batch --------------------------------------------------------

    def _claim(self, wait: float) -> tuple[Claim | None, bool]:
        """One claim (a waiting one when ``wait``), and whether the server held it.

        None when nothing was claimed; held is False when the answer came at
        once (the caller then waits before the next claim, no busy loop).
        """
        try:
            try:
                answer = self._claim_once(wait)
            except Suspected as suspected:
                # This Client-ID let a claim lapse (a stall): show it is alive
                # by releasing that claim (its messages went back long ago),
                # then claim again; suspected again, wait as for an empty queue.
                log.warning("suspected for lapsed claim %s: releasing it",
                            suspected.lapsed_claim_id)
                self._release_id(suspected.lapsed_claim_id)
                answer = self._claim_once(wait)
        except Suspected:
            return None, False
        except (ServerError, TransportError) as exc:
            # The server is down or restarting: wait as for an empty queue.
            log.warning("claiming from %s failed: %s", self.queue, exc)
            return None, False
        except _StopWaiting:
            return None, True  # stopping: run() returns without a wait
        held = self._judge(answer, wait)
        claim = answer.claim
        if claim is None or not claim.messages:
            return None, held
        self.idle.reset()
        self.stats.claims += 1
        return claim, True

    def _judge(self, answer: ClaimAnswer, wait: float) -> bool:
        """Learn from a claim's answer whether the server waits; whether it held this one."""
        if wait <= 0:
            return False
        if answer.waited is not None:
            self.server_waits = True
            # zq answers an empty claim early only when it stops (SIGTERM).
            return answer.claim is not None or answer.seconds >= EARLY_SHARE * wait
        if answer.claim is not None:
            return True  # a claim that found messages says nothing either way
        if answer.seconds >= EARLY_SHARE * wait:
            return True  # held (zq behind a proxy that drops the header)
        self._early_empty += 1
        if self.server_waits is None and self._early_empty >= EARLY_EMPTY_LIMIT:
            log.info("the server at %s ignores wait (not zq, or zq before long polling): "
                     "polling %s with an idle wait instead", self.client.base_url, self.queue)
            self.server_waits = False
        return False

    def _empty(self) -> bool:
        """No message left in the queue, free, delayed or claimed (``until_empty``)."""
        try:
            stats = self.client.stats(self.queue)
        except (ServerError, TransportError) as exc:
            # Unknown is not empty: wait as for a failed claim.
            log.warning("reading the stats of %s failed: %s", self.queue, exc)
            return False
        return stats.total == 0

    def _claim_once(self, wait: float) -> ClaimAnswer:
        if wait <= 0:
            return self.client.claim_answer(self.queue, limit=self.batch, ttl=self.claim_ttl,
                                            grace=self.grace)
        self.stats.long_polls += 1
        self._in_wait = True
        try:
            if self.stopping:  # a signal before the flag was up: do not start waiting
                raise _StopWaiting
            return self.client.claim_answer(self.queue, limit=self.batch,
                                            ttl=self.claim_ttl, grace=self.grace, wait=wait)
        finally:
            self._in_wait = False

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
