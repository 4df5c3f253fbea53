"""One webhook attempt: a POST to an allowed, pinned address, signed, with a timeout.

Zaqar's success rule: a status from 200 to 499 ends the notification (a
4xx is the subscriber refusing it: retrying would not help), anything else
(5xx, no answer, a refused connection) is a failure that the retry policy
retries. A redirect is followed (as a POST, up to ``max_redirects``) only
to a URL ``allowed_hosts`` allows; otherwise it is a failure.

Signature: with a ``secret`` in the subscription's options, the headers
``X-Zq-Signature-Timestamp: <unix seconds>`` and ``X-Zq-Signature:
sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" under the secret>``; the
receiver recomputes it and rejects old timestamps (replays).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import socket
import ssl
import threading
from dataclasses import dataclass
from urllib.parse import urljoin

from zq.notifications.hosts import AllowedHosts, Refused, Target
from zq.subscribers import RESERVED_HEADERS, SIGNATURE, SIGNATURE_TIMESTAMP

REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class Outcome:
    delivered: bool  # the notification is done (2xx-4xx)
    status: int | None
    detail: str  # why it failed, or the status
    # False: no retry can succeed (allowed_hosts refuses the subscriber
    # itself, and the notifier's setting only changes with a restart).
    retry: bool = True


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Zq-Signature`` value of ``body`` sent at ``timestamp``."""
    signed = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def _connected(address: str, port: int, timeout: float | None) -> socket.socket:
    sock = socket.create_connection((address, port), timeout)
    # No Nagle: on a kept-alive connection a small request would otherwise
    # wait for the delayed ACK of the previous answer (40 ms a notification).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = _connected(self._address, self.port, self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout,
                         context=ssl.create_default_context())
        self._address = target.address

    def connect(self) -> None:
        sock = _connected(self._address, self.port, self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class Connections:
    """Idle keep-alive connections by checked target, shared by the notifier's threads.

    A connection is taken out while in use, so no two threads share one; at
    most one idle connection per target and ``MAX_IDLE`` in all are kept.
    """

    MAX_IDLE = 64

    def __init__(self) -> None:
        self._idle: dict[tuple[str, str, int, str], http.client.HTTPConnection] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(target: Target) -> tuple[str, str, int, str]:
        return (target.scheme, target.host, target.port, target.address)

    def take(self, target: Target) -> http.client.HTTPConnection | None:
        with self._lock:
            return self._idle.pop(self._key(target), None)

    def give(self, target: Target, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            old = self._idle.pop(self._key(target), None)
            if len(self._idle) >= self.MAX_IDLE:
                old = old or self._idle.pop(next(iter(self._idle)))
            self._idle[self._key(target)] = connection
        if old is not None:
            old.close()


def post(url: str, body: bytes, headers: dict[str, str], *, allowed: AllowedHosts,
         timeout: float, max_redirects: int, secret: str | None, now: float,
         connections: Connections | None = None) -> Outcome:
    """POST ``body`` to ``url`` (and allowed redirects); never raises for network trouble.

    With ``connections``, a kept-alive connection to the same checked
    address is reused; one the subscriber closed meanwhile is replaced by a
    new one at once (not counted as a failed attempt).
    """
    sent = {k: v for k, v in headers.items() if k.lower() not in RESERVED_HEADERS}
    sent.setdefault("Content-Type", "application/json")
    if secret:
        timestamp = int(now)
        sent[SIGNATURE_TIMESTAMP] = str(timestamp)
        sent[SIGNATURE] = signature(secret, timestamp, body)
    for hop in range(max_redirects + 1):
        try:
            target = allowed.check(url)
        except Refused as exc:
            # Where a redirect leads is the subscriber's to change: retried.
            return Outcome(False, None, f"refused: {exc}", retry=not (exc.lasting and hop == 0))
        try:
            status, location = _exchange(target, body, sent, timeout, connections)
        except (OSError, http.client.HTTPException) as exc:
            return Outcome(False, None, f"{type(exc).__name__}: {exc}")
        if status in REDIRECTS and location:
            url = urljoin(url, location)
            continue
        return Outcome(200 <= status < 500, status, f"HTTP {status}")
    return Outcome(False, None, f"more than {max_redirects} redirects")


# Bytes of an answer read so that its connection can be reused; a longer
# answer closes the connection instead (its body is never used).
MAX_ANSWER = 65536


def _exchange(target: Target, body: bytes, headers: dict[str, str], timeout: float,
              connections: Connections | None) -> tuple[int, str | None]:
    """One request and its answer's status and Location."""
    reused = connections.take(target) if connections is not None else None
    for connection in ([reused] if reused is not None else []) + [None]:
        fresh = connection is None
        if connection is None:
            kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
            connection = kind(target, timeout)
        try:
            connection.request("POST", target.path, body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read(MAX_ANSWER + 1)
        except (OSError, http.client.HTTPException):
            connection.close()
            if fresh:
                raise
            continue  # a kept-alive connection the subscriber had closed: anew
        keep = (connections is not None and not response.will_close
                and len(answer) <= MAX_ANSWER)
        if keep:
            connections.give(target, connection)  # type: ignore[union-attr]
        else:
            connection.close()
        return response.status, response.getheader("Location")
    raise AssertionError("unreachable: the fresh connection returns or raises")
