"""Shape and range checks on client input, shared by every entry point.

Each function either returns the checked (and normalised) value or raises
zq.errors.InvalidRequest with a description naming the field and what is
allowed. Nothing here knows about HTTP or storage; the limits come from
zq.config.Limits.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from zq.bounded_memo import BoundedMemo
from zq.config import Limits
from zq.errors import InvalidRequest
from zq.poison.redrive import DEAD_LETTER_REASONS, RedriveFilter, RedriveRequest

# Patterns are matched whole (re.fullmatch): "$" would let a final newline
# through.
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_\-.]+")
# A name goes into paths (/v2/queues/NAME): "." and ".." would make its
# hrefs point elsewhere once a client normalises them.
PATH_SEGMENTS = frozenset({".", ".."})
# The ids zq issues are hex (uuid4 on SQL and Redis, ObjectId on MongoDB);
# this is the widest shape any of them, now or later, may take.
ID_PATTERN = re.compile(r"[a-zA-Z0-9_\-]{1,64}")
# Markers are 64-bit signed integers in every backend.
MAX_MARKER = 2**63 - 1
# A run of digits this long may be an integer past 64 bits (2**63 has 19).
_LONG_DIGITS = b"0" * 19
# Every digit to "0", every opening bracket ("[" and "{") to "[", everything
# else to " ": then a long run of digits is a plain substring search, and the
# brackets one count, both over one translated copy. A regular expression
# took 90 us on a 10 KB body (a tenth of a post's CPU); this takes 11, where
# the translation and two counts of each bracket on the body took 14.
_JSON_TEXT_SHAPE = bytes(
    0x30 if 0x30 <= i <= 0x39 else 0x5B if i in (0x5B, 0x7B) else 0x20 for i in range(256))
# Control characters (C0 and DEL): no id, name or project id holds one.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")

PATCH_OPERATIONS = ("add", "replace", "remove")
PURGEABLE_RESOURCES = frozenset({"messages", "subscriptions"})


@dataclass(frozen=True, slots=True)
class MetadataChange:
    """One operation of a queue metadata JSON-patch document."""

    op: str  # one of PATCH_OPERATIONS
    key: str  # the metadata key the path /metadata/KEY names
    value: Any = None  # absent for "remove"


class PostedMessage(NamedTuple):
    """One message of a post, checked but without defaults applied.

    A named tuple, not a frozen dataclass: a post of 10 makes 10 of them,
    and a frozen dataclass's ``__init__`` costs twice as much CPU.
    """

    body: Any
    ttl: int | None
    delay: int | None


def name(value: str, *, field: str = "Queue name", max_length: int = 64) -> str:
    """A queue (or pool, flavor) name: ASCII letters, digits, ``_-.``; not ``.`` or ``..``."""
    name_characters(value, field=field, max_length=max_length)
    if value in PATH_SEGMENTS:
        raise InvalidRequest(f"{field} may not be {value!r}: it has a meaning in paths.")
    return value


def name_characters(value: str, *, field: str, max_length: int = 64) -> str:
    """Text made of what a name may hold: a name, a listing marker or name filter."""
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{field} must be a non-empty string.")
    if len(value) > max_length:
        raise InvalidRequest(f"{field} may not be more than {max_length} characters long.")
    if not NAME_PATTERN.fullmatch(value):
        raise InvalidRequest(
            f"{field} may only contain ASCII letters, digits, underscores, dashes and dots."
        )
    return value


def listing_name(value: str | None, field: str, max_length: int = 64) -> str | None:
    """A listing's ``marker`` or ``name`` filter: absent, or the characters of a name."""
    if value is None or value == "":
        return None
    return name_characters(value, field=field, max_length=max_length)


def queue_name(value: str, limits: Limits) -> str:
    """A queue name within the configured length."""
    return name(value, field="Queue name", max_length=limits.max_queue_name_length)


def project_id(value: str | None, limits: Limits) -> str:
    """The tenant id from X-Project-ID: present, non-empty, not too long."""
    if not value:
        raise InvalidRequest("The X-Project-ID header is required and may not be empty.")
    if len(value) > limits.max_project_id_length:
        raise InvalidRequest(
            f"Project ids may not be more than {limits.max_project_id_length} characters long."
        )
    if CONTROL_CHARACTERS.search(value):
        raise InvalidRequest("Project ids may not contain control characters.")
    return value


def _canonical_client_id(value: str | None) -> str:
    if not value:
        raise InvalidRequest("The Client-ID header is required (a UUID).")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise InvalidRequest(f"Malformed Client-ID header {value!r}: it must be a UUID.") from None


# Client-ID headers already checked, each to its canonical text: a client
# sends the same one on every request, and parsing it into a UUID and back
# costs 3 us a request (a dict lookup 0.05).
_CLIENT_IDS_KEPT = 4096
_client_ids: BoundedMemo[str | None, str] = BoundedMemo(_canonical_client_id, _CLIENT_IDS_KEPT)


def client_id(value: str | None) -> str:
    """The Client-ID header: a UUID, returned in its canonical text form."""
    known = _client_ids.kept.get(value)
    if known is None:
        known = _client_ids.remember(value)
    return known


def integer(value: Any, field: str, low: int, high: int) -> int:
    """An integer (never a boolean) with ``low <= value <= high``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest(f"{field} must be an integer between {low} and {high}.")
    if not low <= value <= high:
        raise InvalidRequest(f"{field} must be between {low} and {high}, got {value}.")
    return value


def boolean(value: Any, field: str) -> bool:
    """A JSON boolean (never 0/1 or a string)."""
    if not isinstance(value, bool):
        raise InvalidRequest(f"{field} must be true or false, got {value!r}.")
    return value


def choice(value: Any, field: str, allowed: tuple[str, ...]) -> str:
    """One of the ``allowed`` strings."""
    if not isinstance(value, str) or value not in allowed:
        raise InvalidRequest(
            f"{field} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}."
        )
    return value


def message_ttl(value: Any, limits: Limits, field: str = "Message ttl") -> int:
    return integer(value, field, limits.min_message_ttl, limits.max_message_ttl)


def message_delay(value: Any, limits: Limits, field: str = "Message delay") -> int:
    return integer(value, field, 0, limits.max_message_delay)


def claim_ttl(value: Any, limits: Limits) -> int:
    return integer(value, "Claim ttl", limits.min_claim_ttl, limits.max_claim_ttl)


def claim_grace(value: Any, limits: Limits) -> int:
    return integer(value, "Claim grace", limits.min_claim_grace, limits.max_claim_grace)


def limit(value: Any, high: int, field: str = "limit") -> int:
    """A page size, claim size or pop count: 1..high."""
    return integer(value, field, 1, high)


def claim_wait(value: str | None, limits: Limits) -> float:
    """A claim's ``wait`` query parameter: seconds, 0..max_claim_wait (absent: 0)."""
    if value is None:
        return 0.0
    high = limits.max_claim_wait
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= high:  # also refuses nan and inf
        raise InvalidRequest(
            f"wait must be a number of seconds between 0 and {high} ([limits] "
            f"max_claim_wait), got {value!r}."
        )
    return seconds


def body_size(size: int, cap: int, what: str) -> None:
    """Refuse a request body larger than ``cap`` bytes."""
    if size > cap:
        raise InvalidRequest(f"{what} is too large: {size} bytes, at most {cap} allowed.")


def json_depth(document: Any, limit: int, what: str) -> None:
    """Refuse a parsed JSON document with more than ``limit`` nested arrays or objects."""
    level = [document] if isinstance(document, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            raise InvalidRequest(
                f"{what} is nested too deeply: at most {limit} levels of arrays and "
                "objects are accepted."
            )
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]


def json_text_shape(raw: bytes) -> tuple[int, bool]:
    """JSON text's opening brackets (arrays and objects, strings' ones too), and
    whether it holds a run of digits long enough to be an integer past 64 bits.

    The count bounds the depth: text with fewer brackets cannot nest deeper.
    """
    shape = raw.translate(_JSON_TEXT_SHAPE)
    return shape.count(b"["), _LONG_DIGITS in shape


def has_long_digit_run(raw: bytes) -> bool:
    """Whether ``raw`` holds a run of digits long enough to be an integer past 64 bits."""
    return json_text_shape(raw)[1]


def exact_integers(raw: bytes, what: str) -> None:
    """Refuse JSON text holding an integer orjson would read as a float.

    orjson reads integers from -2**63 to 2**64-1 exactly and any other as
    a float: a client's 2**70 would be stored as 1.1805916207174113e+21.
    """

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # more digits than int() reads
            value = None
        if value is None or not -(2**63) <= value < 2**64:
            shown = text if len(text) <= 40 else f"{text[:20]}...({len(text)} digits)"
            raise InvalidRequest(
                f"{what} holds the integer {shown}, outside the 64-bit range JSON "
                "numbers are kept exactly in; send it as a string."
            )
        return value

    json.loads(raw, parse_int=check)


def object_document(document: Any, what: str) -> dict[str, Any]:
    """A JSON object (dict) document."""
    if not isinstance(document, dict):
        raise InvalidRequest(f"{what} must be a JSON object.")
    return document


def refuse_unknown(names: Iterable[str], known: Collection[str],
                   text: Callable[[list[str]], str]) -> None:
    """InvalidRequest(``text(unknown names, sorted)``) when ``names`` holds one not in ``known``.

    A field zq does not know would be silently ignored: it is refused.
    """
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise InvalidRequest(text(unknown))


def _may_only_hold(what: str, known: Collection[str]) -> Callable[[list[str]], str]:
    """The refusal text of the redrive body and its filter."""
    allowed = ", ".join(f'"{k}"' for k in sorted(known))
    return lambda unknown: (f"{what} may only hold {allowed}, "
                            f"not {', '.join(repr(k) for k in unknown)}.")


def is_id_shaped(value: str) -> bool:
    """Whether ``value`` could be a message or claim id zq issued.

    One that could not names nothing: callers answer as for an unknown id
    (as Zaqar does) and never hand it to a backend.
    """
    return ID_PATTERN.fullmatch(value) is not None


def id_list(ids: list[str], limits: Limits, field: str = "ids") -> list[str]:
    """Message or claim ids from a query parameter (repeated or comma separated)."""
    cleaned = [i for i in (part.strip() for s in ids for part in s.split(",")) if i]
    high = limits.max_ids_per_request
    if not 0 < len(cleaned) <= high:
        raise InvalidRequest(f"{field} must hold between 1 and {high} values.")
    return cleaned


def posted_messages(document: Any, limits: Limits) -> list[PostedMessage]:
    """The ``{"messages": [{"body", "ttl"?, "delay"?}, ...]}`` post document."""
    if not isinstance(document, dict) or "messages" not in document:
        raise InvalidRequest('The request body must be a JSON object with a "messages" list.')
    items = document["messages"]
    if not isinstance(items, list):
        raise InvalidRequest('"messages" must be a JSON array of message objects.')
    if not items:
        raise InvalidRequest('"messages" must hold at least one message.')
    low_ttl, high_ttl = limits.min_message_ttl, limits.max_message_ttl
    high_delay = limits.max_message_delay
    checked = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidRequest(f"messages[{index}] must be a JSON object.")
        if "body" not in item:
            raise InvalidRequest(f'messages[{index}] is missing its "body".')
        ttl = item.get("ttl")
        delay = item.get("delay")
        # The usual cases checked inline (a JSON integer in range, or
        # absent); anything else goes through the checks that name the
        # field. Per message, in a post of 10, the calls and the field's
        # name cost more than the checks.
        if ttl is not None and not (type(ttl) is int and low_ttl <= ttl <= high_ttl):
            ttl = message_ttl(ttl, limits, f"messages[{index}].ttl")
        if delay is not None and not (type(delay) is int and 0 <= delay <= high_delay):
            delay = message_delay(delay, limits, f"messages[{index}].delay")
        checked.append(PostedMessage(item["body"], ttl, delay))
    return checked


def claim_options(document: Any, limits: Limits) -> tuple[int, int]:
    """``{"ttl"?, "grace"?}`` of a claim create or renew -> (ttl, grace).

    A missing or null field takes the configured default (python-zaqarclient
    sends ``null`` for values the caller left out).
    """
    document = {} if document is None else object_document(document, "The claim body")
    ttl = document.get("ttl")
    grace = document.get("grace")
    return (
        limits.default_claim_ttl if ttl is None else claim_ttl(ttl, limits),
        limits.default_claim_grace if grace is None else claim_grace(grace, limits),
    )


# The longest description a reject may give (characters).
MAX_REJECT_DESCRIPTION = 1024
REJECT_FIELDS = frozenset({"description", "retry_after"})


@dataclass(frozen=True, slots=True)
class Rejection:
    """A reject's body: why, and whether and when to retry."""

    description: str | None
    retry: bool  # False: terminal
    retry_after: int | None  # seconds; None with retry: the queue's backoff decides


def reject_document(document: Any, limits: Limits) -> Rejection:
    """``{"description"?, "retry_after"?}`` of a reject; no body: a terminal reject.

    ``description`` is text of at most MAX_REJECT_DESCRIPTION characters (a
    null one counts as absent). ``retry_after`` absent: terminal; seconds,
    0..max message delay: a retry after them; ``null``: a retry once the
    queue's backoff has passed. Any other field is refused (it would be
    silently ignored).
    """
    document = {} if document is None else object_document(document, "The reject body")
    refuse_unknown(document, REJECT_FIELDS, lambda unknown: (
        f"The reject body may only hold \"description\" and \"retry_after\", "
        f"not {', '.join(repr(k) for k in unknown)}."))
    description = document.get("description")
    if description is not None:
        if not isinstance(description, str):
            raise InvalidRequest("description must be a string.")
        if len(description) > MAX_REJECT_DESCRIPTION:
            raise InvalidRequest(
                f"description may not be more than {MAX_REJECT_DESCRIPTION} characters long, "
                f"got {len(description)}.")
    retry_after = document.get("retry_after")
    if retry_after is not None:
        retry_after = integer(retry_after, "retry_after", 0, limits.max_message_delay)
    return Rejection(description, "retry_after" in document, retry_after)


def purge_document(document: Any) -> set[str]:
    """``{"resource_types": [...]}`` of a purge; everything when no body is sent.

    A body without ``resource_types`` is refused, as Zaqar does: a client that
    sends a body meant to choose, and an empty purge-everything by accident
    would lose data.
    """
    if document is None:
        return set(PURGEABLE_RESOURCES)
    document = object_document(document, "The purge body")
    if "resource_types" not in document:
        raise InvalidRequest('The purge body must contain "resource_types".')
    types = document["resource_types"]
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise InvalidRequest('"resource_types" must be a list of strings.')
    refuse_unknown(types, PURGEABLE_RESOURCES, lambda unknown: (
        f'"resource_types" may only hold {sorted(PURGEABLE_RESOURCES)}, not {unknown}.'))
    return set(types)


def metadata_patch(document: Any) -> list[MetadataChange]:
    """A queue metadata JSON-patch document: ops on ``/metadata/KEY``."""
    if not isinstance(document, list):
        raise InvalidRequest("The PATCH body must be a JSON array of operation objects.")
    if not document:
        raise InvalidRequest("The PATCH body must hold at least one operation.")
    changes = []
    for index, raw in enumerate(document):
        where = f"Operation {index}"
        if not isinstance(raw, Mapping):
            raise InvalidRequest(f"{where} must be a JSON object.")
        op = raw.get("op")
        if op not in PATCH_OPERATIONS:
            raise InvalidRequest(
                f"{where}: \"op\" must be one of {', '.join(PATCH_OPERATIONS)}, got {op!r}."
            )
        key = _metadata_key(raw.get("path"), where)
        if op == "remove":
            changes.append(MetadataChange(op, key))
            continue
        if "value" not in raw:
            raise InvalidRequest(f'{where}: "{op}" requires a "value" member.')
        changes.append(MetadataChange(op, key, raw["value"]))
    return changes


def _metadata_key(path: Any, where: str) -> str:
    # A JSON pointer of exactly two tokens, the first being "metadata";
    # "~1" and "~0" decode to "/" and "~" (RFC 6901).
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidRequest(f'{where}: "path" must be a JSON pointer like /metadata/KEY.')
    if re.search(r"~[^01]|~\Z", path):
        raise InvalidRequest(f"{where}: path {path!r} has a \"~\" that is not ~0 or ~1.")
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]
    if len(tokens) != 2 or tokens[0] != "metadata" or not tokens[1]:
        raise InvalidRequest(
            f"{where}: path {path!r} must be /metadata/KEY with a non-empty KEY."
        )
    return tokens[1]


def message_marker(value: str | None) -> int | None:
    """The ``marker`` of a message listing: the position of the last message seen.

    A marker no page ever gave (not a number, past the largest position)
    is MAX_MARKER, after which no message comes: an empty page, as Zaqar
    answers an unknown marker.
    """
    if value is None or value == "":
        return None
    # The length test comes first: int() refuses more than 4300 digits.
    if len(value) > len(str(MAX_MARKER)) or not (value.isascii() and value.isdigit()):
        return MAX_MARKER
    return min(int(value), MAX_MARKER)


# -- redrive (zq.poison.redrive) -------------------------------------------------

REDRIVE_FIELDS = frozenset({"to", "filter", "limit", "dry_run", "marker", "create"})
REDRIVE_FILTER_FIELDS = frozenset({"ids", "reason", "from", "fingerprint",
                                   "dead_lettered_before", "dead_lettered_after"})
# zq.events.fingerprint and zq.encryption.BodyCipher.fingerprint: 16 hex digits.
FINGERPRINT_PATTERN = re.compile(r"[0-9a-f]{16}")


def redrive_limit_cap(limits: Limits) -> int:
    """The most messages one redrive call moves, and its default (API.md)."""
    return limits.max_messages_per_page * 10


def redrive_document(document: Any, limits: Limits) -> RedriveRequest:
    """A redrive body (all optional), checked: a zq.poison.redrive.RedriveRequest.

    ``{"to", "filter": {"ids", "reason", "from", "fingerprint",
    "dead_lettered_before", "dead_lettered_after"}, "limit", "dry_run",
    "marker", "create"}``; ``null`` values count as absent. Unknown fields, here or
    in the filter, are refused: they would be silently ignored.
    """
    document = {} if document is None else object_document(document, "The redrive body")
    refuse_unknown(document, REDRIVE_FIELDS, _may_only_hold("The redrive body", REDRIVE_FIELDS))
    to = document.get("to")
    if to is not None:
        to = name(to, field="to", max_length=limits.max_queue_name_length)
    cap = redrive_limit_cap(limits)
    limit = document.get("limit")
    limit = cap if limit is None else integer(limit, "limit", 1, cap)
    dry_run = document.get("dry_run")
    dry_run = False if dry_run is None else boolean(dry_run, "dry_run")
    create = document.get("create")
    create = False if create is None else boolean(create, "create")
    marker = document.get("marker")
    if marker is not None and (not isinstance(marker, str) or not marker.isascii()
                               or not marker.isdigit() or len(marker) > len(str(MAX_MARKER))):
        raise InvalidRequest(
            'marker must be the "next" string a previous redrive answered with.')
    raw = document.get("filter")
    raw = {} if raw is None else object_document(raw, "filter")
    refuse_unknown(raw, REDRIVE_FILTER_FIELDS, _may_only_hold("filter", REDRIVE_FILTER_FIELDS))
    ids = raw.get("ids")
    if ids is not None:
        if (not isinstance(ids, list) or not 0 < len(ids) <= cap
                or not all(isinstance(i, str) and i for i in ids)):
            raise InvalidRequest(
                f"filter.ids must be a list of 1 to {cap} message ids (strings).")
        ids = tuple(i for i in ids if is_id_shaped(i))  # others name no message
    reason = raw.get("reason")
    if reason is not None:
        reason = choice(reason, "filter.reason", DEAD_LETTER_REASONS)
    source = raw.get("from")
    if source is not None:
        source = name(source, field="filter.from", max_length=limits.max_queue_name_length)
    fingerprint = raw.get("fingerprint")
    if fingerprint is not None and (not isinstance(fingerprint, str)
                                    or not FINGERPRINT_PATTERN.fullmatch(fingerprint)):
        raise InvalidRequest(
            "filter.fingerprint must be a message fingerprint: 16 lowercase hex digits "
            "(as zq stats and the dead_lettered events show it).")
    before = _posix_time(raw.get("dead_lettered_before"), "filter.dead_lettered_before")
    after = _posix_time(raw.get("dead_lettered_after"), "filter.dead_lettered_after")
    if before is not None and after is not None and after >= before:
        raise InvalidRequest(
            "filter.dead_lettered_after must be earlier than filter.dead_lettered_before: "
            "no message was dead lettered between them.")
    selected = RedriveFilter(ids=ids, reason=reason, source=source, fingerprint=fingerprint,
                             dead_lettered_before=before, dead_lettered_after=after)
    return RedriveRequest(to=to, filter=selected, limit=limit, dry_run=dry_run, marker=marker,
                          create=create)


def _posix_time(value: Any, field: str) -> float | None:
    """POSIX seconds (a JSON number >= 0), or None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value \
            or not 0 <= value < 2**53:
        raise InvalidRequest(f"{field} must be a time in POSIX seconds (a number >= 0).")
    return float(value)
