"""Showing storage URIs safely: passwords never reach a log or a terminal.

The one place that finds the password in a URI. It works on the text, not
through ``urllib.parse``, because users paste passwords unencoded: in
``postgresql://zq:a/b@db/zq`` urllib takes ``a`` for the password and
``b@db`` for the path, and would show half of the secret.
"""

from __future__ import annotations

from urllib.parse import unquote

REDACTED = "***"


def _password_span(uri: str) -> tuple[int, int] | None:
    """Where the password sits in ``uri`` (start, end), or None when it has none.

    The userinfo ends at the last ``@`` before the query (a password may hold
    ``@``, ``:`` or ``/``); a password holding ``?`` is found when its ``@``
    comes before the first ``/`` of the rest. The password is what follows
    the first ``:`` of the userinfo.
    """
    start = uri.find("://")
    if start < 0:
        return None
    start += 3
    rest = uri[start:]
    if rest.startswith("/"):  # sqlite:////path: no authority at all
        return None
    query = rest.find("?")
    at = (rest if query < 0 else rest[:query]).rfind("@")
    if at < 0:
        at = rest.find("@")
        slash = rest.find("/")
        if at < 0 or (0 <= slash < at):
            return None
    colon = rest.find(":", 0, at)
    if colon < 0:
        return None
    return start + colon + 1, start + at


def redact(uri: str) -> str:
    """``uri`` with the password (if any) replaced by ``***``."""
    span = _password_span(uri)
    if span is None:
        return uri
    return f"{uri[:span[0]]}{REDACTED}{uri[span[1]:]}"


def without_password(uri: str) -> str:
    """``uri`` with the password and its ``:`` left out (``user@host``)."""
    span = _password_span(uri)
    if span is None:
        return uri
    return f"{uri[:span[0] - 1]}{uri[span[1]:]}"


def scrub(text: str, uri: str) -> str:
    """``text`` (a driver's error about ``uri``) with the URI's password hidden.

    Drivers may echo what they were given; the password is replaced as
    written in the URI and percent-decoded, wherever it appears.
    """
    span = _password_span(uri)
    if span is None:
        return text
    written = uri[span[0]:span[1]]
    for secret in sorted({written, unquote(written)}, key=len, reverse=True):
        if secret:
            text = text.replace(secret, REDACTED)
    return text
