"""What a subscriber and its ``post_headers`` must be for the notifier to send them.

The subscription API (zq.subscriptions) refuses anything else with 400,
and the notifier (zq.notifications.webhook, .mail) sends what passes as it
is: a value that the HTTP or mail library would refuse on every attempt
must never be stored, or it is retried until its retry policy gives up.

What http.client can put on the wire (RFC 9110): a header name is a token;
a value visible ASCII, spaces and tabs (no CR or LF: a header injection); a
URL visible ASCII (a path or query in another script is percent-encoded, a
host name written in punycode). A ``mailto:`` subscriber's address,
``subject`` and ``from`` become mail headers once percent-decoded: no
control character there (``%0d%0a``).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from zq.validation import CONTROL_CHARACTERS

# The signature a ``secret`` option adds (zq.notifications.webhook).
SIGNATURE = "X-Zq-Signature"
SIGNATURE_TIMESTAMP = "X-Zq-Signature-Timestamp"
# Headers a subscription's ``post_headers`` may not set: they are zq's.
RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding",
                              SIGNATURE.lower(), SIGNATURE_TIMESTAMP.lower()})

HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
URL = re.compile(r"[\x21-\x7e]+")


def headers_problem(headers: Any) -> str | None:
    """Why ``post_headers`` cannot be sent, or None."""
    if not isinstance(headers, dict):
        return "post_headers must be an object of header names and string values."
    for name, value in headers.items():
        if not HEADER_NAME.fullmatch(name):
            return f"post_headers: {name!r} is not a header name (ASCII letters, digits, -...)."
        if name.lower() in RESERVED_HEADERS:
            return f"post_headers: {name!r} is set by zq and cannot be given."
        if not isinstance(value, str) or not HEADER_VALUE.fullmatch(value):
            return (f"post_headers: the value of {name!r} must be a string of visible ASCII "
                    "characters, spaces and tabs (no line breaks).")
    return None


def url_problem(url: str) -> str | None:
    """Why an http(s) subscriber cannot be requested as it is, or None."""
    if not URL.fullmatch(url):
        return (f"The subscriber {url!r} must be visible ASCII: percent-encode a path or "
                "query in another script, write a host name in punycode, encode spaces.")
    return None


def mailto_problem(subscriber: str) -> str | None:
    """Why a ``mailto:`` subscriber cannot be mailed, or None."""
    parts = urlsplit(subscriber)
    decoded = [unquote(parts.path)] + [value for values in parse_qs(parts.query).values()
                                       for value in values]
    if any(CONTROL_CHARACTERS.search(text) for text in decoded):
        return (f"The subscriber {subscriber!r} holds a control character (a line break?) "
                "once percent-decoded.")
    return None
