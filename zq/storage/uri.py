"""Showing storage URIs safely: passwords never reach a log or a terminal."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

REDACTED = "***"


def redact(uri: str) -> str:
    """``uri`` with the password (if any) replaced by ``***``."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal needs its brackets back
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username or ''}:{REDACTED}@{host}"
    return urlunsplit(parts._replace(netloc=netloc))
