"""The service rules where they live: QueueService over every real driver.

No HTTP: each rule (names, metadata defaults and checks, dead letter
policy and chain, delivery limits) is exercised on the service itself, with
SingleBackend over the contract suite's storages, so a rule that moved into
one driver or into the API would show here.
"""

from __future__ import annotations

import pytest

from zq.clock import ManualClock
from zq.config import Limits
from zq.errors import Conflict, DeadLetterConflict, InvalidRequest, QueueNotFound
from zq.poison import moves
from zq.poison.history import compact_history
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.storage.base import Storage

POLICY = {"_max_claim_count": 1, "_dead_letter_queue": "dead"}


@pytest.fixture
def service(storage: Storage) -> QueueService:
    return QueueService(Limits(), SingleBackend(storage))


def post(service: QueueService, project: str, queue: str, *bodies: object) -> list[str]:
    return service.post_messages(project, queue, {"messages": [{"body": b} for b in bodies]},
                                 client_id=None, body_size=10)


def test_create_queue_reports_whether_it_was_new(service: QueueService, project: str) -> None:
    assert service.create_queue(project, "work", {"owner": "ops"}) is True
    assert service.create_queue(project, "work", {"owner": "other"}) is False
    assert service.queue_metadata(project, "work")["owner"] == "ops"


def test_bad_queue_name_is_refused_before_storage(service: QueueService, project: str) -> None:
    with pytest.raises(InvalidRequest):
        service.create_queue(project, "no spaces", None)
    with pytest.raises(InvalidRequest):
        post(service, project, "a:b", 1)


def test_metadata_reads_with_reserved_defaults(service: QueueService, project: str) -> None:
    limits = Limits()
    shown = service.queue_metadata(project, "never-created")
    assert shown["_default_message_ttl"] == limits.default_message_ttl
    assert shown["_max_messages_post_size"] == limits.max_messages_post_size


def test_patch_of_a_missing_queue_or_absent_key(service: QueueService, project: str) -> None:
    with pytest.raises(QueueNotFound):
        service.patch_metadata(project, "nope", [
            {"op": "add", "path": "/metadata/a", "value": 1}])
    service.create_queue(project, "work", {})
    with pytest.raises(Conflict):
        service.patch_metadata(project, "work", [{"op": "remove", "path": "/metadata/a"}])


def test_dead_letter_queue_is_created_with_its_source(
    service: QueueService, project: str
) -> None:
    service.create_queue(project, "work", POLICY)
    assert service.create_queue(project, "dead", {}) is False


def test_dead_letter_cycle_is_refused(service: QueueService, project: str) -> None:
    service.create_queue(project, "a", {"_dead_letter_queue": "b"})
    with pytest.raises(DeadLetterConflict, match="cycle"):
        service.patch_metadata(project, "b", [
            {"op": "add", "path": "/metadata/_dead_letter_queue", "value": "a"}])
    with pytest.raises(DeadLetterConflict, match="own dead letter queue"):
        service.create_queue(project, "c", {"_dead_letter_queue": "c"})
    assert "_dead_letter_queue" not in service.queue_metadata(project, "b")


def test_claim_past_max_claim_count_moves_to_dead_letter_queue(
    service: QueueService, project: str, clock: ManualClock
) -> None:
    service.create_queue(project, "work", POLICY)
    [mid] = post(service, project, "work", "x")
    first = service.claim(project, "work", {"ttl": 60}, limit=1, client_id=None)
    assert first is not None and [m.id for m in first.messages] == [mid]
    service.release_claim(project, "work", first.id, client_id=None)
    assert service.claim(project, "work", None, limit=1, client_id=None) is None
    [moved] = service.list_messages(project, "dead", include_claimed=True).messages
    assert moved.id == mid
    [entry] = compact_history(moved.history)
    assert entry["queue"] == "work" and entry["reason"] == moves.REASON_MAX_CLAIM_COUNT


def test_pop_applies_the_dead_letter_rule(service: QueueService, project: str) -> None:
    service.create_queue(project, "work", POLICY)
    [mid] = post(service, project, "work", "x")
    claim = service.claim(project, "work", None, limit=1, client_id=None)
    assert claim is not None
    service.release_claim(project, "work", claim.id, client_id=None)
    assert service.pop_messages(project, "work", 1, client_id=None) == []
    assert [m.id for m in service.list_messages(project, "dead").messages] == [mid]


def test_post_over_the_queue_size_cap_is_refused(service: QueueService, project: str) -> None:
    service.create_queue(project, "small", {"_max_messages_post_size": 64})
    with pytest.raises(InvalidRequest):
        service.post_messages(project, "small", {"messages": [{"body": "x" * 100}]},
                              client_id=None, body_size=200)
    assert service.list_messages(project, "small").messages == []


def test_claim_limit_over_the_maximum_is_refused(service: QueueService, project: str) -> None:
    with pytest.raises(InvalidRequest):
        service.claim(project, "work", None,
                      limit=Limits().max_messages_per_claim_or_pop + 1, client_id=None)


def test_a_batch_delete_settles_its_claims_in_its_own_step(
    service: QueueService, storage: Storage, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The consumer log's settle of the claims a batch names goes in the
    # delete's step: no write of its own (issue 31), once per claim per process.
    separate: list[str] = []
    monkeypatch.setattr(storage.consumers, "settle",
                        lambda project, queue, claim_id, **_: separate.append(claim_id))
    steps: list[bool] = []
    delete_many = storage.messages.delete_many

    def counted(*args: object, **kwargs: object) -> list[str]:
        steps.append(bool(kwargs.get("settle_claims")))
        return delete_many(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(storage.messages, "delete_many", counted)
    post(service, project, "q", 1, 2, 3, 4)
    claimed = service.claim(project, "q", None, limit=4, client_id="c1")
    assert claimed is not None
    ids = [m.id for m in claimed.messages]
    assert service.delete_messages(project, "q", ids[:2], claim_ids=[claimed.id],
                                   client_id="c1") == ids[:2]
    assert service.delete_messages(project, "q", ids[2:], claim_ids=[claimed.id],
                                   client_id="c1") == ids[2:]
    assert steps == [True, False]  # the second knows this process settled it
    assert separate == []
    records = storage.consumers.claims(project, "q", expires_after=0)
    assert [r.settled is not None for r in records if r.claim_id == claimed.id] == [True]
