"""Acting on a queue's metadata for a post, claim or pop.

Each reads the queue's metadata first (defaults, post size, dead letter
policy, backoff), then acts. The read is cached per worker where safe
(zq.service.metadata_cache); a driver with
``Storage.checks_metadata_version`` is given the version the action was
decided on, in its DeliveryRules, and refuses a stale one in the same atomic
step. This module is the one place that decides whether a version goes down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from zq.errors import InvalidRequest, MetadataChanged
from zq.poison import breaker
from zq.poison.consumers import SUSPECT_LAPSED_CONSUMERS
from zq.service.metadata_cache import MetadataCache
from zq.storage.base import Storage
from zq.storage.delivery_rules import DeliveryRules

# Reads of a queue's metadata a post, claim or pop makes at most when the
# metadata keeps changing under it.
METADATA_ATTEMPTS = 3

T = TypeVar("T")


def with_metadata(
    cache: MetadataCache,
    project: str,
    queue: str,
    storage: Storage,
    act: Callable[[dict[str, Any], str | None], T],
) -> T:
    """``act(metadata, version)`` with the queue's metadata, cached where safe.

    ``version`` is given only where the driver checks it
    (``Storage.checks_metadata_version``), which refuses a stale one
    (MetadataChanged): read again and act again; the last attempt passes no
    version, as for the other drivers. A refusal (InvalidRequest) made on
    cached metadata is checked against a fresh read too: a stale post size
    cap must not refuse a post.
    """
    attempts = METADATA_ATTEMPTS
    while True:
        attempts -= 1
        cached = cache.get(storage, project, queue)
        checked = attempts > 0 and storage.checks_metadata_version
        try:
            return act(cached.read.metadata, cached.read.version if checked else None)
        except MetadataChanged:
            cache.forget(project, queue)
        except InvalidRequest:
            if not cached.hit:
                raise
            cache.forget(project, queue)


def version_for(storage: Storage, version: str | None) -> str | None:
    """``version`` where ``storage`` checks metadata versions; None elsewhere.

    A post reads the metadata where the queue was, and writes where it is
    placed: a version goes down only to a placed storage that checks it.
    """
    return version if storage.checks_metadata_version else None


def outage_rules(storage: Storage, stored: dict[str, Any]) -> DeliveryRules:
    """The queue's breaker and blame split (zq.poison.breaker, zq.poison.blame), as rules.

    The same value goes with every claim, pop, delete, reject and terminal
    reject of the queue (the claim and pop add their own parts), so that
    each records its failure or success in its own atomic step. A driver
    without ``has_breaker`` is given neither: Zaqar's behaviour.
    """
    if not storage.has_breaker:
        return DeliveryRules()
    return DeliveryRules(breaker=breaker.policy_from_metadata(stored),
                         blame_split=stored.get(SUSPECT_LAPSED_CONSUMERS) is True)
