"""Receive a request's body whole, within a deadline, before a thread runs the WSGI app.

granian's WSGI interface calls the app on one of ``[server] threads``
threads as soon as the request head has arrived, and the app's reads of
``wsgi.input`` then wait for the client on that thread, without any time
limit. A dozen clients that announce a body and send one byte of it took
every thread of a two-worker server, and ``/v2/ping`` went unanswered for
as long as they stayed connected.

``BufferedWSGI`` is an RSGI app (granian's asyncio interface): the body
is received on the worker's event loop, where a waiting client holds no
thread, for at most ``body_timeout`` seconds (408 and the connection
closed after that). Only a request that has fully arrived is handed to
the WSGI app, on a pool of ``threads`` threads, with the body in memory.
A body announced larger than ``max_body`` is not read at all, and one of
unknown length (chunked) is read to one byte past it: the app refuses
both with 413 (zq.api.middleware.RequestRules), without the rest of the
body ever being received. The answer is handed to granian whole, so a
client that does not read it holds no thread either.

A claim that found nothing and asks to wait (``POST .../claims?wait=S``)
leaves a ``zq.waiting.ClaimWait`` in its environ: its 204 is handed back to
the loop instead of going out, and the request waits in ``waiting``
(zq.waiting.WaitingClaims) holding no thread; each wake-up runs the app
on it once more (``wait_for_claim``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import io
import logging
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from zq.api.errors import error_body
from zq.bounded_memo import BoundedMemo
from zq.waiting import ENVIRON_KEY, ClaimWait, WaitingClaims
from zq.waiting.waiters import WAKE

log = logging.getLogger("zq.server")

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Headers = list[tuple[str, str]]

# Headers that PEP 3333 names without the HTTP_ prefix.
UNPREFIXED = {"content-type": "CONTENT_TYPE", "content-length": "CONTENT_LENGTH"}
JSON_HEADERS: Headers = [("content-type", "application/json")]


def _environ_key(name: str) -> str:
    return UNPREFIXED.get(name) or "HTTP_" + name.upper().replace("-", "_")


# The environ key of each header name seen (RSGI gives names lower-cased): a
# client sends the same few on every request, and building a key (upper,
# replace, concatenation) cost more than the lookup. Bounded, as the names
# are the client's.
ENVIRON_KEYS_KEPT = 512
_environ_keys: BoundedMemo[str, str] = BoundedMemo(_environ_key, ENVIRON_KEYS_KEPT)
Answer = tuple[int, Headers, bytes]

# Environ keys between the loop and the app threads: the answer of a request
# handed back to the loop (a waiting claim's), and "hand the answer back"
# (a waiting claim's later attempts).
ANSWER_KEY = "zq.answer"
HAND_BACK_KEY = "zq.hand_back"
# Requests a worker receives and serves at once besides its waiting claims
# (granian's own default backpressure with 2 workers).
ACTIVE_REQUESTS = 512
# The largest claim body kept for a waiting claim's later attempts: a claim
# body is ``{"ttl": ..., "grace": ...}``; a waiting claim with more answers
# at once, so thousands of waiting claims never hold much memory.
MAX_WAITING_BODY = 1024


class RSGIScope(Protocol):
    """What granian's RSGI scope offers that this module reads."""

    http_version: str
    server: str
    client: str
    scheme: str
    method: str
    path: str
    query_string: str
    headers: Any


async def receive_body(protocol: Any, length: int | None, max_body: int) -> bytes:
    """The request body: all ``length`` bytes, or without one at most ``max_body`` + 1."""
    if length is not None:
        return await protocol()
    chunks = []
    size = 0
    async for chunk in protocol:
        chunks.append(chunk)
        size += len(chunk)
        if size > max_body:
            break
    return b"".join(chunks)


def environ_of(scope: RSGIScope, body: bytes) -> dict[str, Any]:
    """The PEP 3333 environ of an RSGI request whose body has been received."""
    server_name, _, server_port = scope.server.rpartition(":")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope.method,
        "SCRIPT_NAME": "",
        # RSGI gives the path percent-decoded as UTF-8; WSGI wants the
        # decoded bytes tunnelled as latin-1 (falcon decodes them back).
        "PATH_INFO": scope.path.encode("utf-8").decode("latin-1"),
        "QUERY_STRING": scope.query_string,
        "SERVER_NAME": server_name,
        "SERVER_PORT": server_port,
        "SERVER_PROTOCOL": f"HTTP/{scope.http_version}",
        "REMOTE_ADDR": scope.client.rpartition(":")[0],
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.scheme,
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    keys = _environ_keys.kept
    for name, value in scope.headers.items():
        key = keys.get(name)
        if key is None:
            key = _environ_keys.remember(name)
        # A repeated header is one value, comma separated (RFC 9110, 5.3).
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


def call_app(app: WSGIApp, environ: dict[str, Any]) -> tuple[int, Headers, bytes]:
    """Run the WSGI app on one request; its status, headers and whole body."""
    answer: dict[str, Any] = {}
    written: list[bytes] = []

    def start_response(status: str, headers: Headers, exc_info: Any = None) -> Callable:
        if exc_info is not None and answer:
            raise exc_info[1].with_traceback(exc_info[2])
        answer["status"], answer["headers"] = status, headers
        return written.append

    result = app(environ, start_response)
    try:
        written.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return int(answer["status"].split(" ", 1)[0]), answer["headers"], b"".join(written)


class BufferedWSGI:
    """An RSGI app running ``app`` once each request has fully arrived (module docstring)."""

    def __init__(self, app: WSGIApp, *, threads: int, body_timeout: float, max_body: int,
                 waiting: WaitingClaims | None = None,
                 max_active: int = ACTIVE_REQUESTS) -> None:
        self.app = app
        self.body_timeout = body_timeout
        self.max_body = max_body
        self.waiting = waiting
        # Requests receiving their body or running the app, waiting claims
        # left out: granian takes more than this many at once to make room
        # for those (zq.server), and the bodies held in memory stay bounded.
        self.active = asyncio.Semaphore(max_active)
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.answers: Answers | None = None  # made on the worker's loop, at its first request
        self.threads = [threading.Thread(target=self.serve_jobs, name=f"zq-request-{number}",
                                         daemon=True) for number in range(threads)]
        for thread in self.threads:
            thread.start()

    async def __rsgi__(self, scope: RSGIScope, protocol: Any) -> None:
        waiting = self.waiting
        if waiting is None or "wait=" not in scope.query_string:
            async with self.active:
                await self.serve(scope, protocol)
            return
        waiting.asking += 1  # before the claim runs: no wake-up after it is missed
        try:
            async with self.active:
                found = await self.serve(scope, protocol)
            if found is not None:  # the claim found nothing and may wait
                await self.wait_for_claim(scope, protocol, *found)
        finally:
            waiting.asking -= 1

    async def serve(self, scope: RSGIScope, protocol: Any
                    ) -> tuple[bytes, dict[str, Any], float] | None:
        """Receive the request and run the app on it; (body, environ, start) of a
        claim that found nothing and may wait, which is not answered yet."""
        body = b""
        length = announced_length(scope.headers)
        if (length is not None and 0 < length <= self.max_body) or (
                length is None and "transfer-encoding" in scope.headers):
            try:
                async with asyncio.timeout(self.body_timeout):
                    body = await receive_body(protocol, length, self.max_body)
            except TimeoutError:
                protocol.response_bytes(408, [*JSON_HEADERS, ("connection", "close")], error_body(
                    "Request Timeout",
                    f"The request body did not arrive within {self.body_timeout:g} seconds."))
                return None
        answers = self.answers
        if answers is None:
            answers = self.answers = Answers(asyncio.get_running_loop())
        started = answers.loop.time()
        environ = environ_of(scope, body)
        await self.run_app(environ, protocol, answers)
        if ANSWER_KEY not in environ:
            return None
        if "wait=" not in scope.query_string or len(body) > MAX_WAITING_BODY:
            # A wait spelled otherwise (w%61it=), or a body too large to keep
            # for the claim's later attempts: answered now, as without wait.
            protocol.response_bytes(*environ[ANSWER_KEY])
            return None
        return body, environ, started

    async def run_app(self, environ: dict[str, Any], protocol: Any, answers: Answers) -> None:
        """Run the app on ``environ`` on a thread; it answers, or hands the answer back."""
        answered = answers.loop.create_future()
        self.jobs.put((environ, protocol, answers, answered))
        # granian answers 500 to a request whose coroutine ends unanswered.
        await answered

    async def wait_for_claim(self, scope: RSGIScope, protocol: Any, body: bytes,
                             environ: dict[str, Any], started: float) -> None:
        """A claim that found nothing waits in ``self.waiting``; each wake-up runs it again.

        Answers the claim that delivers, or the last 204 once the wait is over
        (its time is up, or the worker stops). A claim made for a client
        that left meanwhile is released at once.
        """
        waiting = self.waiting
        assert waiting is not None and self.answers is not None
        waiting.bind(self.answers.loop)  # as granian's __rsgi_init__ does, for tests without it
        answer: Answer = environ[ANSWER_KEY]
        wait: ClaimWait = environ[ENVIRON_KEY]
        waiter = waiting.enter(wait.key, wait.seconds, since=started,
                               client_id=environ.get("HTTP_CLIENT_ID", ""))
        if waiter is None:
            protocol.response_bytes(*answer)
            return
        gone = asyncio.ensure_future(protocol.client_disconnect())
        try:
            while await waiting.park(waiter, gone) == WAKE:
                attempt = environ_of(scope, body)
                attempt[HAND_BACK_KEY] = True
                await self.run_app(attempt, protocol, self.answers)
                made: ClaimWait | None = attempt.get(ENVIRON_KEY)
                if made is not None and made.claimed == 0 and attempt[ANSWER_KEY][0] == 204:
                    waiting.tried(waiter, claimed=0, more=False)
                    answer = attempt[ANSWER_KEY]
                    continue
                if made is not None and made.claimed:
                    waiting.tried(waiter, claimed=made.claimed, more=made.more)
                    if gone.done() and made.release is not None:
                        # Nobody will read this claim: its messages must not
                        # stay held for the claim's ttl.
                        try:
                            await asyncio.to_thread(made.release)
                        except Exception as error:  # they stay held for the ttl, no worse
                            log.warning("Releasing the claim of a client that left failed: "
                                        "%s", error)
                        break
                protocol.response_bytes(*attempt[ANSWER_KEY])
                return
        finally:
            waiting.leave(waiter)
            gone.cancel()
        protocol.response_bytes(*answer)

    def __rsgi_init__(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.waiting is not None:
            self.waiting.bind(loop)
            answer_waiting_claims_first(loop, self.waiting.close)

    def __rsgi_del__(self, loop: Any) -> None:
        self.close()

    def close(self) -> None:
        """Let the threads end once the jobs already queued are answered."""
        for _ in self.threads:
            self.jobs.put(None)

    def serve_jobs(self) -> None:
        """One of the threads running the app: answers each job, then wakes its coroutine."""
        while job := self.jobs.get():
            environ, protocol, answers, answered = job
            try:
                status, headers, content = call_app(self.app, environ)
            except Exception:
                log.exception("The app failed on %s %s", environ["REQUEST_METHOD"],
                              environ["PATH_INFO"])
                status, headers, content = 500, JSON_HEADERS, error_body(
                    "Internal server error",
                    "The server failed to handle the request; the error has been logged.")
            if self.hands_back(environ, status):
                environ[ANSWER_KEY] = (status, headers, content)
            else:
                protocol.response_bytes(status, headers, content)
            answers.add(answered)

    def hands_back(self, environ: dict[str, Any], status: int) -> bool:
        """Whether the loop, not this thread, answers: a waiting claim's attempt."""
        if self.waiting is None:
            return False
        if environ.get(HAND_BACK_KEY):
            return True
        wait: ClaimWait | None = environ.get(ENVIRON_KEY)
        return wait is not None and wait.claimed == 0 and status == 204


class Answers:
    """Wakes the coroutines of answered requests on their loop, several per wake-up.

    Each wake-up of the loop from a thread is a write to its self-pipe, a
    system call after which the thread waits for the GIL again; under load
    that wait, once per request, cost more than the request's own work
    (docs/benchmarks.md). A thread only wakes the loop when no wake-up is
    pending; the loop then settles every future answered by then. The
    response itself is already with granian: only the coroutine's end waits.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.answered: collections.deque[asyncio.Future] = collections.deque()
        self.wake_pending = False

    def add(self, answered: asyncio.Future) -> None:
        """Called on an app thread once ``answered``'s response is with granian."""
        # deque.append and the flag's read and write are each atomic under
        # the GIL. settle_all clears the flag before it empties the deque, so
        # a future appended while the flag still read True is emptied by
        # the pending wake-up; a race of two threads costs one extra wake-up.
        self.answered.append(answered)
        if not self.wake_pending:
            self.wake_pending = True
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                self.loop.call_soon_threadsafe(self.settle_all)

    def settle_all(self) -> None:
        """On the loop: end the wait of every request answered so far."""
        self.wake_pending = False
        answered = self.answered
        while answered:
            settle(answered.popleft())


def settle(answered: asyncio.Future) -> None:
    if not answered.done():
        answered.set_result(None)


def answer_waiting_claims_first(loop: asyncio.AbstractEventLoop,
                                 close: Callable[[], None]) -> None:
    """On SIGTERM or SIGINT, answer the waiting claims before granian's own handler runs.

    granian stops a worker by letting the requests in flight finish: a
    claim waiting 20 s would hold the stop that long. Its handlers are on
    the loop (asyncio keeps them in ``_signal_handlers``; there is no public
    reader), so each is wrapped; where that is not possible the waiting
    claims end with their wait, within ``[limits] max_claim_wait``.
    """
    handlers = getattr(loop, "_signal_handlers", None) or {}
    for number in (signal.SIGTERM, signal.SIGINT):
        handle = handlers.get(number)
        callback = getattr(handle, "_callback", None)
        if callback is None:
            continue
        arguments = getattr(handle, "_args", ())

        def both(callback: Callable[..., Any] = callback, arguments: Any = arguments) -> None:
            close()
            callback(*arguments)

        loop.add_signal_handler(number, both)


def announced_length(headers: Any) -> int | None:
    """The Content-Length of a request, None without a valid one."""
    try:
        return int(headers.get("content-length"))
    except (TypeError, ValueError):
        return None
