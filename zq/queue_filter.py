"""Which queues a filtered listing keeps: Zaqar's metadata filters.

``GET /v2/queues?key=value`` keeps the queues whose metadata holds ``key``
with that value (zaqar/transport/wsgi/v2_0/queues.py turns every query
parameter that is not a listing option into such a filter, its value an
integer when it reads as one, else the text). The name filter is the
storage's own (``QueueController.list(name=...)``); this module adds the
metadata filter on top of any page source, so every driver and the pooled
catalog apply one rule and page the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar


class Listed(Protocol):
    """What a filter reads of a listed queue (zq.storage.records.QueueRecord has it).

    Structural, so that the storage contract can use this module without
    this module importing the contract back.
    """

    @property
    def name(self) -> str: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...


Q = TypeVar("Q", bound=Listed)

# Queues read per round while looking for matches: bounded, so a filter
# that matches few queues among many never loads a project's queues at once.
SCAN_PAGE = 100



def filter_value(text: str) -> Any:
    """A filter's value from the query string: an integer when it reads as one (Zaqar)."""
    try:
        return int(text)
    except ValueError:
        return text


def same_value(stored: Any, wanted: Any) -> bool:
    """JSON equality: numbers by value (never booleans), everything else by type and value."""
    numbers = (int, float)
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return type(stored) is type(wanted) and stored == wanted
    if isinstance(stored, numbers) and isinstance(wanted, numbers):
        return stored == wanted
    return type(stored) is type(wanted) and stored == wanted


def metadata_matches(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether ``stored`` holds every key of ``wanted`` with an equal value."""
    return all(key in stored and same_value(stored[key], value) for key, value in wanted.items())


def matching_page(
    fetch: Callable[[str | None, int], list[Q]], *, marker: str | None, limit: int,
    wanted: Mapping[str, Any],
) -> list[Q]:
    """Up to ``limit`` queues after ``marker`` (by name) whose metadata matches ``wanted``."""
    if not wanted:
        return fetch(marker, limit)
    found: list[Q] = []
    after = marker
    while len(found) < limit:
        page = fetch(after, SCAN_PAGE)
        for record in page:
            if metadata_matches(record.metadata, wanted):
                found.append(record)
                if len(found) == limit:
                    break
        if len(page) < SCAN_PAGE:
            break
        after = page[-1].name
    return found


def count_matching(fetch: Callable[[str | None, int], list[Q]], wanted: Mapping[str, Any]) -> int:
    """How many queues ``fetch`` holds whose metadata matches ``wanted``."""
    count, after = 0, None
    while True:
        page = fetch(after, SCAN_PAGE)
        count += sum(metadata_matches(r.metadata, wanted) for r in page)
        if len(page) < SCAN_PAGE:
            return count
        after = page[-1].name
