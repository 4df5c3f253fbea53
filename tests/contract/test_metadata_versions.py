"""QueueController.read_metadata and the metadata version post, claim and pop check.

Every driver versions metadata: the version changes with every metadata
change, queue creation and deletion. A driver whose deliveries check it
offers the capability ``Storage.checks_metadata_version``, which
changes nothing on a post, claim or pop given a stale one; the others'
deliveries take no version at all. Metadata writes checked against it:
test_metadata_writes.py.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import pytest

from zq import events
from zq.errors import MetadataChanged
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import MISSING_VERSION

from .helpers import CLAIM_TTL, GRACE, claim, events_of, new_message, post

STALE_ACTIONS: dict[str, Callable] = {
    "post": lambda storage, project, version: storage.messages.post(
        project, "q", [new_message()], client_id="c",
        rules=DeliveryRules(metadata_version=version)),
    "claim": lambda storage, project, version: storage.claims.create(
        project, "q", ttl=CLAIM_TTL, grace=GRACE, limit=10, client_id="c",
        rules=DeliveryRules(metadata_version=version)),
    "pop": lambda storage, project, version: storage.messages.pop(
        project, "q", limit=10, client_id="c", rules=DeliveryRules(metadata_version=version)),
}

# The drivers with the capability (a driver gaining it joins this list).
VERSIONED = ("redis",)


def needs_capability(storage) -> None:
    if not storage.checks_metadata_version:
        pytest.skip("this driver's deliveries do not check metadata versions")


def test_the_capability_is_where_the_driver_has_it(storage, backend_name):
    assert storage.checks_metadata_version == backend_name.startswith(VERSIONED)


def test_plain_deliveries_take_no_version(storage):
    """No driver carries a version parameter it could only refuse."""
    for method in (storage.messages.post, storage.messages.pop, storage.claims.create):
        if not storage.checks_metadata_version:
            assert "metadata_version" not in inspect.signature(method).parameters


def test_read_metadata_of_a_missing_queue_is_empty(storage, project):
    assert storage.queues.read_metadata(project, "q").metadata == {}


def test_read_metadata_shows_the_stored_metadata(storage, project):
    storage.queues.create(project, "q", {"_max_claim_count": 2, "a": [1]})
    assert storage.queues.read_metadata(project, "q").metadata == {
        "_max_claim_count": 2, "a": [1]}


def test_the_version_changes_with_the_metadata_and_the_queue_only(storage, project):
    def version() -> str:
        return storage.queues.read_metadata(project, "q").version

    missing = version()
    assert missing == MISSING_VERSION
    assert not storage.queues.read_metadata(project, "q").exists
    seen = [missing]
    storage.queues.create(project, "q", {})
    seen.append(version())
    post(storage, project, "q", 2)
    claim(storage, project, "q", 1)
    storage.queues.purge(project, "q")
    assert version() == seen[-1]  # messages and claims leave it alone
    storage.queues.set_metadata(project, "q", {"a": 1})
    seen.append(version())
    storage.queues.set_metadata(project, "q", {"a": 1})  # same value, still a change
    seen.append(version())
    storage.queues.delete(project, "q")
    seen.append(version())
    storage.queues.create(project, "q", {"a": 1})  # as before: a new queue all the same
    seen.append(version())
    assert seen[-2] == missing
    assert len(set(seen[1:-2] + seen[-1:])) == len(seen) - 2
    assert missing not in seen[1:-2] + seen[-1:]


@pytest.mark.parametrize("action", sorted(STALE_ACTIONS))
def test_a_stale_version_changes_nothing(storage, project, action):
    storage.queues.create(project, "q", {})
    [posted] = post(storage, project, "q", 1)
    stale = storage.queues.read_metadata(project, "q").version
    storage.queues.set_metadata(project, "q", {"_default_message_ttl": 60})
    before = events_of(storage, project)
    needs_capability(storage)
    with pytest.raises(MetadataChanged):
        STALE_ACTIONS[action](storage, project, stale)
    assert events_of(storage, project) == before
    [message] = storage.messages.list(project, "q", include_claimed=True, echo=True)
    assert (message.id, message.claim_id, message.claim_count) == (posted, None, 0)


@pytest.mark.parametrize("action", sorted(STALE_ACTIONS))
def test_the_current_version_acts(storage, project, action):
    needs_capability(storage)
    storage.queues.create(project, "q", {})
    post(storage, project, "q", 1)
    storage.queues.set_metadata(project, "q", {"a": 1})
    current = storage.queues.read_metadata(project, "q").version
    STALE_ACTIONS[action](storage, project, current)
    expected = {"post": events.POSTED, "claim": events.CLAIMED, "pop": events.DELETED}[action]
    assert events_of(storage, project)[-1].kind == expected


def test_a_version_read_before_the_queue_existed_is_stale_once_it_does(storage, project):
    missing = storage.queues.read_metadata(project, "q").version
    needs_capability(storage)
    storage.queues.create(project, "q", {"_default_message_ttl": 60})
    with pytest.raises(MetadataChanged):
        STALE_ACTIONS["post"](storage, project, missing)
    assert storage.queues.stats(project, "q").total == 0
