"""Pre-signed URLs, as Zaqar has them: HMAC-SHA256 over paths, methods, project, expiry.

``POST /v2/queues/{q}/share`` signs; a request carrying ``URL-Signature``,
``URL-Expires``, ``URL-Methods``, ``URL-Paths`` and ``X-Project-ID`` is
verified here and may then use exactly those methods on those paths (and
the resources below them, such as one message) until the expiry.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zq import validation
from zq.auth.identity import Grant
from zq.errors import InvalidRequest

SHAREABLE_PATHS = ("messages", "claims", "subscriptions")
SIGNABLE_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
DEFAULT_PATHS = ("messages",)
DEFAULT_METHODS = ("GET",)
# The members of a share request: Zaqar's (zaqar/transport/wsgi/v2_0/urls.py)
# and ``project_id``, which python-zaqarclient's signed_url_create sends (the
# API refuses any project other than the caller's).
SHARE_KEYS = frozenset({"paths", "methods", "expires", "project_id"})
DEFAULT_LIFETIME = 86400  # seconds, when the request gives no expiry (as Zaqar)
EXPIRES_FORMAT = "%Y-%m-%dT%H:%M:%S"  # UTC, the form Zaqar returns and clients send back

HEADERS = ("URL-Signature", "URL-Expires", "URL-Methods", "URL-Paths")


class SignatureRejected(Exception):
    """A signed request whose signature is missing parts, wrong or expired (403)."""


@dataclass(frozen=True, slots=True)
class SignedUrl:
    """What ``POST .../share`` answers and a client sends back as headers."""

    project: str
    paths: tuple[str, ...]
    methods: tuple[str, ...]
    expires: str
    signature: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "project": self.project, "paths": list(self.paths), "methods": list(self.methods),
            "expires": self.expires, "signature": self.signature,
        }


def parse_expires(value: str) -> float:
    """POSIX seconds of an ISO 8601 time; one without an offset is UTC."""
    try:
        moment = datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise InvalidRequest(
            f"expires must be an ISO 8601 date and time, got {value!r}."
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    try:
        # In UTC, so that format_expires can spell it: an offset may push a
        # time at either end of the calendar past year 9999 or before year 1.
        return moment.astimezone(datetime.UTC).timestamp()
    except (OverflowError, ValueError):
        raise InvalidRequest(
            f"expires {value!r} is outside the years 1 to 9999 in UTC."
        ) from None


def format_expires(timestamp: float) -> str:
    """The canonical text of an expiry: whole seconds, UTC, no offset."""
    return datetime.datetime.fromtimestamp(int(timestamp), datetime.UTC).strftime(
        EXPIRES_FORMAT
    )


def _signature(key: str, paths: Iterable[str], methods: Iterable[str], project: str,
               expires: str) -> str:
    message = "\n".join(
        [",".join(sorted(paths)), ",".join(sorted(methods)), project, expires]
    )
    return hmac.new(key.encode(), message.encode(), hashlib.sha256).hexdigest()


def sign(
    key: str, queue_path: str, project: str, document: Any, *, now: float, max_lifetime: int
) -> SignedUrl:
    """Sign a share request ``document`` for the queue at ``queue_path``.

    ``document`` is the body of ``POST .../share``: optional ``paths``
    (subset of SHAREABLE_PATHS, default messages), ``methods`` (default
    GET) and ``expires`` (ISO 8601, default a day from ``now``). Raises
    InvalidRequest for anything else.
    """
    document = {} if document is None else document
    if not isinstance(document, Mapping):
        raise InvalidRequest("The share request must be a JSON object.")
    validation.refuse_unknown(document, SHARE_KEYS, lambda unknown: (
        f"The share request has unknown keys {unknown}; known: {sorted(SHARE_KEYS)}."))
    names = _string_list(document.get("paths"), "paths", SHAREABLE_PATHS, DEFAULT_PATHS)
    methods = _string_list(
        document.get("methods"), "methods", SIGNABLE_METHODS, DEFAULT_METHODS, upper=True
    )
    raw_expires = document.get("expires")
    if raw_expires is None:
        expires_at = now + DEFAULT_LIFETIME
    elif isinstance(raw_expires, str):
        expires_at = parse_expires(raw_expires)
    else:
        raise InvalidRequest("expires must be an ISO 8601 date and time string.")
    if expires_at <= now:
        raise InvalidRequest("expires must be in the future.")
    if expires_at - now > max_lifetime:
        raise InvalidRequest(
            f"expires may be at most {max_lifetime} seconds in the future."
        )
    paths = tuple(sorted(f"{queue_path}/{name}" for name in names))
    methods = tuple(sorted(methods))
    expires = format_expires(expires_at)
    return SignedUrl(
        project, paths, methods, expires, _signature(key, paths, methods, project, expires)
    )


def verify(key: str, headers: Mapping[str, str | None], project: str, *, now: float) -> Grant:
    """The grant of a signed request's headers; SignatureRejected when invalid or expired."""
    values = {name: headers.get(name) for name in HEADERS}
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise SignatureRejected(f"A signed request needs the headers {', '.join(missing)}.")
    paths = _split(values["URL-Paths"])
    methods = [m.upper() for m in _split(values["URL-Methods"])]
    try:
        expires_at = parse_expires(values["URL-Expires"] or "")
    except InvalidRequest as exc:
        raise SignatureRejected(exc.description) from None
    expected = _signature(key, paths, methods, project, format_expires(expires_at))
    if not hmac.compare_digest(expected, (values["URL-Signature"] or "").lower()):
        raise SignatureRejected("The URL signature does not match its paths, methods, "
                                "project and expiry.")
    if expires_at <= now:
        raise SignatureRejected("The URL signature has expired.")
    return Grant(tuple(paths), frozenset(methods), expires_at)


def _split(header: str | None) -> list[str]:
    return [part.strip() for part in (header or "").split(",") if part.strip()]


def _string_list(
    value: Any, field: str, allowed: tuple[str, ...], default: tuple[str, ...],
    *, upper: bool = False,
) -> list[str]:
    if value is None:
        return list(default)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise InvalidRequest(f"{field} must be a non-empty list of strings.")
    items = {v.upper() if upper else v for v in value}
    unknown = sorted(items - set(allowed))
    if unknown:
        raise InvalidRequest(
            f"{field} may only hold {', '.join(allowed)}; got {', '.join(unknown)}."
        )
    return sorted(items)


def sign_paths(key: str, paths: Iterable[str], methods: Iterable[str], project: str, *,
               expires_at: float) -> SignedUrl:
    """Sign exact ``paths`` (no share document): for URLs zq itself hands out,
    such as a subscription's confirmation request (one path, PUT)."""
    paths = tuple(sorted(paths))
    methods = tuple(sorted(m.upper() for m in methods))
    expires = format_expires(expires_at)
    return SignedUrl(
        project, paths, methods, expires, _signature(key, paths, methods, project, expires)
    )
