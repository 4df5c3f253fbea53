"""Compare-and-set metadata writes: the metadata version and the links version.

``set_metadata(expected_version=...)`` writes only while the queue's
metadata version is the one given; ``links_version=...`` (on set_metadata
and create) only while the project's links version is the one given, and
moves it. A refused write raises MetadataChanged and changes nothing.
"""

from __future__ import annotations

import pytest

from zq.errors import MetadataChanged, QueueNotFound

from .helpers import post


def metadata(storage, project, queue="q"):
    return storage.queues.read_metadata(project, queue)


def test_a_write_at_the_current_version_replaces_the_metadata(storage, project):
    storage.queues.create(project, "q", {"a": 1})
    before = metadata(storage, project)
    storage.queues.set_metadata(project, "q", {"b": 2}, expected_version=before.version)
    after = metadata(storage, project)
    assert after.metadata == {"b": 2}
    assert after.version != before.version


def test_a_write_at_a_stale_version_changes_nothing(storage, project):
    storage.queues.create(project, "q", {"a": 1})
    stale = metadata(storage, project).version
    storage.queues.set_metadata(project, "q", {"a": 2})  # another writer
    current = metadata(storage, project)
    with pytest.raises(MetadataChanged):
        storage.queues.set_metadata(project, "q", {"a": 3}, expected_version=stale)
    assert metadata(storage, project) == current


def test_a_version_of_a_deleted_queue_is_stale_for_its_successor(storage, project):
    storage.queues.create(project, "q", {"a": 1})
    old = metadata(storage, project).version
    storage.queues.delete(project, "q")
    storage.queues.create(project, "q", {"a": 1})  # same name, same metadata
    with pytest.raises(MetadataChanged):
        storage.queues.set_metadata(project, "q", {"a": 2}, expected_version=old)
    assert metadata(storage, project).metadata == {"a": 1}


def test_a_conditional_write_to_a_missing_queue_is_not_found(storage, project):
    with pytest.raises(QueueNotFound):
        storage.queues.set_metadata(project, "q", {"a": 1},
                                    expected_version=metadata(storage, project).version)
    assert not storage.queues.exists(project, "q")


def test_the_links_version_moves_only_with_writes_given_it(storage, project):
    start = storage.queues.links_version(project)
    storage.queues.create(project, "a", {})
    storage.queues.set_metadata(project, "a", {"x": 1})
    post(storage, project, "new", 1)  # creates a queue implicitly
    assert storage.queues.links_version(project) == start
    storage.queues.set_metadata(project, "a", {"_dead_letter_queue": "b"}, links_version=start)
    moved = storage.queues.links_version(project)
    assert moved != start
    storage.queues.create(project, "b", {"_dead_letter_queue": "c"}, links_version=moved)
    assert storage.queues.links_version(project) not in (start, moved)
    assert metadata(storage, project, "b").metadata == {"_dead_letter_queue": "c"}


def test_links_versions_are_per_project(storage, project):
    other = project + "-other"
    start = storage.queues.links_version(other)
    storage.queues.create(project, "a", {}, links_version=storage.queues.links_version(project))
    assert storage.queues.links_version(other) == start
    storage.queues.create(other, "a", {}, links_version=start)  # not stale
    assert storage.queues.exists(other, "a")


def test_a_write_at_a_stale_links_version_changes_nothing(storage, project):
    storage.queues.create(project, "a", {})
    stale = storage.queues.links_version(project)
    storage.queues.create(project, "b", {"_dead_letter_queue": "a"}, links_version=stale)
    current = storage.queues.links_version(project)
    before = metadata(storage, project, "a")
    with pytest.raises(MetadataChanged):
        storage.queues.set_metadata(project, "a", {"_dead_letter_queue": "b"},
                                    expected_version=before.version, links_version=stale)
    assert metadata(storage, project, "a") == before
    with pytest.raises(MetadataChanged):
        storage.queues.create(project, "c", {"_dead_letter_queue": "a"}, links_version=stale)
    assert not storage.queues.exists(project, "c")
    assert storage.queues.links_version(project) == current


def test_a_stale_metadata_version_leaves_the_links_version_alone(storage, project):
    storage.queues.create(project, "a", {})
    stale = metadata(storage, project, "a").version
    storage.queues.set_metadata(project, "a", {"x": 1})
    links = storage.queues.links_version(project)
    with pytest.raises(MetadataChanged):
        storage.queues.set_metadata(project, "a", {"_dead_letter_queue": "b"},
                                    expected_version=stale, links_version=links)
    assert storage.queues.links_version(project) == links
    assert metadata(storage, project, "a").metadata == {"x": 1}
    # The links version is still good for a write that reads again.
    storage.queues.set_metadata(project, "a", {"_dead_letter_queue": "b"},
                                expected_version=metadata(storage, project, "a").version,
                                links_version=links)
    assert metadata(storage, project, "a").metadata == {"_dead_letter_queue": "b"}


def test_creating_a_queue_that_exists_changes_nothing(storage, project):
    storage.queues.create(project, "a", {"x": 1})
    links = storage.queues.links_version(project)
    before = metadata(storage, project, "a")
    assert storage.queues.create(project, "a", {"y": 2}, links_version=links) is False
    assert metadata(storage, project, "a") == before
    assert storage.queues.links_version(project) == links
