"""The service over CatalogPools: placement, flavors, dead letter queues, paging."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.pooling.conftest import Pooled
from zq.errors import DeadLetterConflict, InvalidRequest, NoPoolAvailable


def placed(pooled: Pooled, project: str, queue: str) -> str | None:
    return pooled.pools.pool_of(project, queue)


def test_queues_spread_over_both_pools_and_live_in_their_backend(two_pools, project):
    for i in range(12):
        two_pools.service.create_queue(project, f"q{i:02d}", None)
    where = {f"q{i:02d}": placed(two_pools, project, f"q{i:02d}") for i in range(12)}
    assert set(where.values()) == {"one", "two"}
    backends = two_pools.pools.storages()
    for queue, pool in where.items():
        other = "two" if pool == "one" else "one"
        assert backends[pool].queues.exists(project, queue)
        assert not backends[other].queues.exists(project, queue)
    # Messages go where the queue lives and come back from there.
    two_pools.service.post_messages(
        project, "q00", {"messages": [{"body": 1}]}, client_id=None, body_size=10
    )
    assert backends[where["q00"]].queues.stats(project, "q00").total == 1


def test_weighted_placement_follows_weights_with_a_seeded_random(pooled, pool_uris, project):
    pooled.admin.put_pool("one", {"uri": pool_uris["one"], "weight": 1})
    pooled.admin.put_pool("two", {"uri": pool_uris["two"], "weight": 3})
    pooled.admin.put_pool("three", {"uri": pool_uris["three"], "weight": 0})
    for i in range(200):
        pooled.service.create_queue(project, f"q{i:03d}", None)
    counts = Counter(placed(pooled, project, f"q{i:03d}") for i in range(200))
    assert counts["three"] == 0  # weight 0 takes no new queues
    assert 30 <= counts["one"] <= 70  # expected 50 of 200
    assert counts["one"] + counts["two"] == 200


def test_same_seed_same_placement(management_uri, tmp_path, pool_uris, clock, project):
    from tests.pooling.conftest import make_pooled

    choices = []
    for run in range(2):
        made = make_pooled(f"sqlite:///{tmp_path / f'm{run}.sqlite3'}", clock)
        made.admin.put_pool("one", {"uri": pool_uris["one"], "weight": 1})
        made.admin.put_pool("two", {"uri": pool_uris["two"], "weight": 1})
        for i in range(10):
            made.service.create_queue(f"{project}-{run}", f"q{i}", None)
        choices.append([placed(made, f"{project}-{run}", f"q{i}") for i in range(10)])
        made.close()
    assert choices[0] == choices[1]


def test_flavor_places_on_its_pools_and_flavorless_queues_avoid_them(
    two_pools, pool_uris, project
):
    two_pools.admin.put_pool("three", {"uri": pool_uris["three"], "weight": 100})
    two_pools.admin.put_flavor("fast", {"pool_list": ["three"]})
    for i in range(6):
        two_pools.service.create_queue(project, f"f{i}", {"_flavor": "fast"})
        two_pools.service.create_queue(project, f"n{i}", None)
    assert {placed(two_pools, project, f"f{i}") for i in range(6)} == {"three"}
    assert "three" not in {placed(two_pools, project, f"n{i}") for i in range(6)}


def test_unknown_flavor_is_refused_and_registers_nothing(two_pools, project):
    with pytest.raises(InvalidRequest, match="'nope'"):
        two_pools.service.create_queue(project, "q", {"_flavor": "nope"})
    assert placed(two_pools, project, "q") is None
    two_pools.service.create_queue(project, "q", None)
    with pytest.raises(InvalidRequest, match="'nope'"):
        two_pools.service.patch_metadata(
            project, "q", [{"op": "add", "path": "/metadata/_flavor", "value": "nope"}]
        )


def test_no_pool_at_all_is_unavailable(pooled, project):
    with pytest.raises(NoPoolAvailable):
        pooled.service.create_queue(project, "q", None)


def test_new_dead_letter_queue_is_registered_on_the_source_pool(two_pools, project):
    for i in range(8):
        source = f"src{i}"
        two_pools.service.create_queue(
            project, source, {"_dead_letter_queue": f"dlq{i}", "_max_claim_count": 1}
        )
        pool = placed(two_pools, project, source)
        assert placed(two_pools, project, f"dlq{i}") == pool
        assert two_pools.pools.storages()[pool].queues.exists(project, f"dlq{i}")


def test_a_new_source_goes_to_its_existing_dead_letter_queue_pool(two_pools, project):
    for i in range(8):
        two_pools.service.create_queue(project, f"dlq{i}", None)
        two_pools.service.create_queue(project, f"src{i}", {"_dead_letter_queue": f"dlq{i}"})
        assert placed(two_pools, project, f"src{i}") == placed(two_pools, project, f"dlq{i}")


def queues_on_two_pools(pooled: Pooled, project: str) -> tuple[str, str]:
    """Two queue names, created on different pools."""
    by_pool: dict[str, str] = {}
    i = 0
    while len(by_pool) < 2:
        name = f"q{i}"
        pooled.service.create_queue(project, name, None)
        by_pool.setdefault(placed(pooled, project, name), name)
        i += 1
    return by_pool["one"], by_pool["two"]


def test_dead_letter_queue_on_another_pool_is_refused_naming_both(two_pools, project):
    on_one, on_two = queues_on_two_pools(two_pools, project)
    patch = [{"op": "add", "path": "/metadata/_dead_letter_queue", "value": on_two}]
    with pytest.raises(DeadLetterConflict) as refused:
        two_pools.service.patch_metadata(project, on_one, patch)
    text = refused.value.description
    assert "'one'" in text and "'two'" in text and on_one in text and on_two in text
    assert "_dead_letter_queue" not in two_pools.service.queue_metadata(project, on_one)


def test_new_queue_of_a_flavor_cannot_join_a_dead_letter_queue_outside_it(
    two_pools, pool_uris, project
):
    two_pools.admin.put_pool("three", {"uri": pool_uris["three"], "weight": 1})
    two_pools.admin.put_flavor("fast", {"pool_list": ["three"]})
    on_one, _ = queues_on_two_pools(two_pools, project)
    with pytest.raises(DeadLetterConflict) as refused:
        two_pools.service.create_queue(
            project, "fresh", {"_flavor": "fast", "_dead_letter_queue": on_one}
        )
    assert "'one'" in refused.value.description and "'fast'" in refused.value.description
    assert placed(two_pools, project, "fresh") is None


def test_two_sources_on_different_pools_cannot_share_a_dead_letter_queue(two_pools, project):
    on_one, on_two = queues_on_two_pools(two_pools, project)
    two_pools.service.patch_metadata(
        project, on_one, [{"op": "add", "path": "/metadata/_dead_letter_queue", "value": "d"}]
    )
    two_pools.service.delete_queue(project, "d")  # still registered: on_one names it
    with pytest.raises(DeadLetterConflict, match="'one'"):
        two_pools.service.patch_metadata(
            project, on_two, [{"op": "add", "path": "/metadata/_dead_letter_queue", "value": "d"}]
        )
    # Re-created by hand, it goes back to its source's pool.
    two_pools.service.create_queue(project, "d", None)
    assert placed(two_pools, project, "d") == "one"


def test_a_deleted_dead_letter_queue_stays_registered_on_its_source_pool(
    two_pools, project
):
    # A claim's dead letter move recreates it in the source's backend, and
    # claims no longer check the catalog: the registration must outlive it.
    service = two_pools.service
    service.create_queue(project, "src", {"_dead_letter_queue": "dlq", "_max_claim_count": 1})
    pool = placed(two_pools, project, "src")
    service.delete_queue(project, "dlq")
    assert placed(two_pools, project, "dlq") == pool
    assert not two_pools.pools.storages()[pool].queues.exists(project, "dlq")
    [message_id] = service.post_messages(
        project, "src", {"messages": [{"body": "poison"}]}, client_id=None, body_size=20
    )
    first = service.claim(project, "src", None, limit=1, client_id=None)
    assert first is not None
    service.release_claim(project, "src", first.id, client_id=None)
    assert service.claim(project, "src", None, limit=1, client_id=None) is None
    assert placed(two_pools, project, "dlq") == pool
    moved = service.get_message(project, "dlq", message_id)
    assert moved.claim_count == 1
    assert two_pools.pools.storages()[pool].queues.stats(project, "dlq").total == 1


def test_a_terminal_reject_lands_in_the_dead_letter_queue_on_the_source_pool(
    two_pools, project
):
    service = two_pools.service
    for i in range(4):
        service.create_queue(project, f"src{i}", {"_dead_letter_queue": f"dlq{i}"})
        [message_id] = service.post_messages(
            project, f"src{i}", {"messages": [{"body": "poison"}]}, client_id=None,
            body_size=20)
        held = service.claim(project, f"src{i}", None, limit=1, client_id=None)
        service.reject_message(project, f"src{i}", message_id, {"description": "bad"},
                               claim_id=held.id, client_id=None)
        pool = placed(two_pools, project, f"src{i}")
        assert placed(two_pools, project, f"dlq{i}") == pool
        moved = service.get_message(project, f"dlq{i}", message_id)
        assert moved.history[0]["reason"] == "rejected"
        assert two_pools.pools.storages()[pool].queues.stats(project, f"dlq{i}").total == 1


def test_listing_pages_across_pools_through_the_catalog(two_pools, project):
    names = [f"q{i:02d}" for i in range(9)]
    for name in reversed(names):
        two_pools.service.create_queue(project, name, {"k": name})
    assert {placed(two_pools, project, n) for n in names} == {"one", "two"}
    seen, marker = [], None
    while True:
        page = two_pools.service.list_queues(
            project, marker=marker, limit=4, detailed=True, with_count=True
        )
        assert page.count == 9
        if not page.queues:
            break
        assert all(q.metadata["k"] == q.name for q in page.queues)
        seen += [q.name for q in page.queues]
        marker = page.queues[-1].name
    assert seen == names
    filtered = two_pools.service.list_queues(project, name="q0", limit=20, with_count=True)
    assert [q.name for q in filtered.queues] == names and filtered.count == 9


def test_deleted_queue_is_unregistered_and_listed_no_more(two_pools, project):
    two_pools.service.create_queue(project, "gone", None)
    two_pools.service.delete_queue(project, "gone")
    assert placed(two_pools, project, "gone") is None
    assert two_pools.service.list_queues(project).queues == []


def test_health_reports_every_pool(two_pools):
    report = two_pools.service.health()
    assert set(report) == {"one", "two"}
    for pool in report.values():
        assert pool["storage_reachable"] is True
        assert pool["operation_status"]["list_queues"]["succeeded"] is True
