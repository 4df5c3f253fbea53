"""Two projects never see each other's queues, messages, claims."""

from __future__ import annotations

import pytest

from zq.errors import ClaimNotFound, MessageNotFound, QueueNotFound

from .helpers import claim, ids, post


def test_projects_are_isolated(storage, project):
    other = project + "-b"
    storage.queues.create(project, "q", {"owner": "a"})
    storage.queues.create(other, "q", {"owner": "b"})
    mine = post(storage, project, "q", 2)
    theirs = post(storage, other, "q", 3)
    assert storage.queues.get_metadata(other, "q") == {"owner": "b"}
    assert [q.name for q in storage.queues.list(other)] == ["q"]
    assert storage.queues.count(project) == 1
    assert storage.queues.stats(project, "q").total == 2
    assert ids(storage.messages.list(project, "q", echo=True)) == mine
    with pytest.raises(MessageNotFound):
        storage.messages.get(other, "q", mine[0])
    assert storage.messages.delete_many(other, "q", mine, client_id=None) == []
    claimed = claim(storage, project, "q", 10)
    assert ids(claimed.messages) == mine
    with pytest.raises(ClaimNotFound):
        storage.claims.get(other, "q", claimed.id)
    assert ids(claim(storage, other, "q", 10).messages) == theirs
    storage.queues.purge(other, "q")
    assert storage.queues.stats(project, "q").claimed == 2
    storage.queues.delete(project, "q")
    assert storage.queues.exists(other, "q")
    with pytest.raises(QueueNotFound):
        storage.queues.get_metadata(project, "q")
