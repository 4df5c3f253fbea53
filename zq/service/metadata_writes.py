"""Metadata writes: compare-and-set, again while another writer came first.

A PUT or PATCH reads the metadata, decides and writes on the condition that
nothing it decided on moved meanwhile (QueueController.set_metadata's
``expected_version`` and ``links_version``); the dead letter chain is
checked under the project's links version, so two writers never form a
cycle between them (docs/architecture.md, "Decisions").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from zq import metadata as meta
from zq import validation
from zq.errors import Conflict, MetadataChanged, MetadataConflict
from zq.poison import dead_letter_chain
from zq.storage.base import Storage

# Times a PUT or PATCH reads, decides and writes metadata at most while
# other writers keep changing it (or the project's dead letter links)
# under it, before it answers 409.
METADATA_WRITE_ATTEMPTS = 8

T = TypeVar("T")


def write_metadata(queue: str, attempt: Callable[[], T]) -> T:
    """``attempt()``: read, decide and write metadata, again while a version moved.

    Each attempt reads what it decides on afresh and writes on the
    condition that none of it changed meanwhile (MetadataChanged when
    it did), so no write is lost and no dead letter cycle is formed by
    two writers at once. Past METADATA_WRITE_ATTEMPTS: MetadataConflict.
    """
    for _ in range(METADATA_WRITE_ATTEMPTS):
        try:
            return attempt()
        except MetadataChanged:
            continue
    raise MetadataConflict(
        f"The metadata of queue {queue!r} (or the dead letter queues of its project) "
        f"changed {METADATA_WRITE_ATTEMPTS} times while this request was changing it; "
        "nothing was written. Read the metadata again and retry."
    )


def checked_links(
    storage: Storage, project: str, queue: str, target: str | None,
    metadata_of: Callable[[str], dict[str, Any]],
) -> str | None:
    """The links version to write ``queue -> target`` with, the chain checked under it.

    None when there is no link to check (no dead letter queue). The
    version is read before the chain, so a link written meanwhile by
    another writer moves it and this write fails. The queues of a
    chain share one pool, so ``storage`` holds the whole chain.
    ``metadata_of(name)``: a queue's stored metadata.
    """
    if target is None:
        return None
    links = storage.queues.links_version(project)
    check_chain(queue, target, metadata_of)
    return links


def check_chain(queue: str, target: str | None,
                metadata_of: Callable[[str], dict[str, Any]]) -> None:
    """Refuse a dead letter queue that would close a cycle (zq.poison.dead_letter_chain)."""
    if target is not None:
        dead_letter_chain.check_chain(
            queue, target, lambda name: metadata_of(name).get(meta.DEAD_LETTER_QUEUE))


def create_dead_letter_queue(storage: Storage, project: str, target: str | None) -> None:
    """Create the dead letter queue, on its source's storage (the pool rule's promise)."""
    if target is not None:
        storage.queues.create(project, target, {})


def apply_patch(
    metadata: dict[str, Any], changes: Sequence[validation.MetadataChange]
) -> dict[str, Any]:
    """The metadata after the changes, in order (Zaqar's JSON-patch semantics).

    ``add`` sets a key; ``replace`` and ``remove`` of an absent ordinary key
    raise Conflict (reserved keys always count as present).
    """
    updated = dict(metadata)
    for change in changes:
        present = change.key in updated or meta.is_reserved(change.key)
        if change.op in ("replace", "remove") and not present:
            raise Conflict(f"Cannot {change.op} metadata key {change.key!r}: it is not set.")
        if change.op == "remove":
            updated.pop(change.key, None)
        else:
            updated[change.key] = change.value
    return updated
