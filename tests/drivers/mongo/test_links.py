"""The links lease: a writer that stopped while holding it blocks links changes only
for LEASE seconds (on the driver's clock), then the next writer takes it over."""

from __future__ import annotations

import pytest

from zq.clock import ManualClock
from zq.errors import MetadataChanged
from zq.storage.mongo import MongoStorage, links


def link(storage: MongoStorage, project: str, source: str, target: str) -> None:
    queues = storage.queues
    queues.set_metadata(project, source, {"_dead_letter_queue": target},
                        links_version=queues.links_version(project))


def test_a_lease_left_behind_expires(storage: MongoStorage, project: str,
                                     clock: ManualClock) -> None:
    storage.queues.create(project, "a", {})
    link(storage, project, "a", "b")  # the links document exists from here

    def refused() -> None:
        raise MetadataChanged("the queue's own version moved")

    before = storage.queues.links_version(project)
    with pytest.raises(MetadataChanged):
        links.write_link(storage._ctx, project, before, refused)
    assert storage.queues.links_version(project) == before  # put back: nothing linked
    link(storage, project, "a", "c")
    # A writer that dies for good leaves the lease held.
    held = storage.queues.links_version(project)
    storage._ctx.links.update_one({"_id": project}, {"$inc": {"version": 1},
                                                   "$set": {"until": clock.now() + links.LEASE}})
    with pytest.raises(MetadataChanged):
        link(storage, project, "a", "d")
    clock.advance(links.LEASE - 1)
    with pytest.raises(MetadataChanged):
        link(storage, project, "a", "d")
    assert storage.queues.get_metadata(project, "a") == {"_dead_letter_queue": "c"}
    clock.advance(1)
    link(storage, project, "a", "d")
    assert storage.queues.get_metadata(project, "a") == {"_dead_letter_queue": "d"}
    assert storage.queues.links_version(project) not in (held, str(int(held) + 1))
