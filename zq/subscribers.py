"""What a subscriber and its ``post_headers`` must be for the notifier to send them.

The subscription API (zq.subscriptions) refuses anything else with 400,
and the notifier (zq.notifications.webhook, .mail) sends what passes as it
is: a value that the HTTP or mail library would refuse on every attempt
must never be stored, or it is retried until its retry policy gives up.

What http.client can put on the wire (RFC 9110): a header name is a token;
a value visible ASCII, spaces and tabs (no CR or LF: a header injection); a
URL visible ASCII (a path or query in another script is percent-encoded, a
host name written in punycode). A ``mailto:`` subscriber is one plain
address and nothing else (``mail_recipient``): its URI is the tenant's,
the SMTP host and sender the operator's.
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
    try:
        mail_recipient(subscriber)
    except ValueError as exc:
        return f"The subscriber {subscriber!r} is refused: {exc}."
    return None


# A conservative address: no percent-encoding, separators, quotes, comments
# or query, so what is checked is the one recipient SMTP is given.
_ADDRESS = re.compile(
    r"[A-Za-z0-9!#$&'*+/=^_`{|}~.-]+"
    r"@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*")


def mail_recipient(subscriber: str) -> str:
    """The one address of a ``mailto:`` subscriber; ValueError says why there is none.

    The URI is the tenant's; the mail goes out through the operator's SMTP
    host from the operator's ``smtp_from``. So it names exactly one
    recipient and carries no header (``?subject=``, ``?from=``, ``?cc=``):
    otherwise any tenant could relay mail to many addresses, or as anyone.
    The API refuses others (400); the notifier refuses any stored before.
    """
    scheme, _, rest = subscriber.partition(":")
    if scheme.lower() != "mailto":
        raise ValueError("it is not a mailto: URI")
    if "?" in rest:
        raise ValueError("a mailto: subscriber takes no query (no subject, from or other "
                         "header: the operator's [notifications] smtp_from sends every mail)")
    if not _ADDRESS.fullmatch(rest):
        raise ValueError("a mailto: subscriber names exactly one plain address "
                         "(local@domain: no list, no percent-encoding, no quotes)")
    return rest
