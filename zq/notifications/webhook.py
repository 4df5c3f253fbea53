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
from dataclasses import dataclass
from urllib.parse import urljoin

from zq.notifications.hosts import AllowedHosts, Refused, Target

SIGNATURE = "X-Zq-Signature"
SIGNATURE_TIMESTAMP = "X-Zq-Signature-Timestamp"
REDIRECTS = (301, 302, 303, 307, 308)
# Headers a subscription's ``post_headers`` may not set: they are zq's.
RESERVED_HEADERS = {"host", "content-length", "transfer-encoding", SIGNATURE.lower(),
                    SIGNATURE_TIMESTAMP.lower()}


@dataclass(frozen=True)
class Outcome:
    delivered: bool  # the notification is done (2xx-4xx)
    status: int | None
    detail: str  # why it failed, or the status


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Zq-Signature`` value of ``body`` sent at ``timestamp``."""
    signed = str(timestamp).encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout,
                         context=ssl.create_default_context())
        self._address = target.address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def post(url: str, body: bytes, headers: dict[str, str], *, allowed: AllowedHosts,
         timeout: float, max_redirects: int, secret: str | None, now: float) -> Outcome:
    """POST ``body`` to ``url`` (and allowed redirects); never raises for network trouble."""
    sent = {k: v for k, v in headers.items() if k.lower() not in RESERVED_HEADERS}
    sent.setdefault("Content-Type", "application/json")
    if secret:
        timestamp = int(now)
        sent[SIGNATURE_TIMESTAMP] = str(timestamp)
        sent[SIGNATURE] = signature(secret, timestamp, body)
    for _ in range(max_redirects + 1):
        try:
            target = allowed.check(url)
        except Refused as exc:
            return Outcome(False, None, f"refused: {exc}")
        kind = _PinnedHTTPS if target.scheme == "https" else _PinnedHTTP
        connection = kind(target, timeout)
        try:
            connection.request("POST", target.path, body=body, headers=sent)
            response = connection.getresponse()
            status = response.status
            location = response.getheader("Location")
            response.read(65536)  # a bounded look: the answer's body is not used
        except (OSError, http.client.HTTPException) as exc:
            return Outcome(False, None, f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()
        if status in REDIRECTS and location:
            url = urljoin(url, location)
            continue
        return Outcome(200 <= status < 500, status, f"HTTP {status}")
    return Outcome(False, None, f"more than {max_redirects} redirects")
