"""The Redis driver on a real local Redis Cluster: the layout, migration, the drained log.

The contract suite runs on the cluster too (backend ``redis-cluster``);
these are the cluster's own promises: every key a project's scripts touch
is in its home's slot, a call never runs while its slot migrates (and runs
whole afterwards), and the log drained from the homes' streams holds every
event once, each project's in commit order.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from redis.crc import key_slot

from tests.contract.helpers import events_of, new_message
from tests.redis_cluster import LocalCluster
from zq import events
from zq.clock import ManualClock
from zq.config import RedisConfig
from zq.errors import InvalidRequest, StorageUnavailable
from zq.poison.dead_letter import policy_from_metadata
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.redis import RedisStorage, open_redis
from zq.storage.redis import cluster as cluster_book
from zq.storage.redis.cluster import BUCKETS, bucket, home_of
from zq.storage.redis.layout import LAYOUT, upgrade_uri
from zq.storage.redis.scripts import NOT_CONFIRMED
from zq.storage.redis.uri import parse_uri
from zq.storage.wake_listener import ThreadedListener


def test_the_uri_names_any_nodes_and_takes_the_options_of_redis() -> None:
    target = parse_uri("redis+cluster://:pw@h1:7000,h2,[::1]:7002/?prefix=blue&socket_timeout=3")
    assert target.cluster
    assert target.nodes == (("h1", 7000), ("h2", 6379), ("::1", 7002))
    assert target.prefix == "blue:"
    assert "socket_timeout=3" in target.url and "prefix" not in target.url
    assert parse_uri("redis+cluster://h1:7000").nodes == (("h1", 7000),)


@pytest.mark.parametrize("uri", [
    "redis+cluster://h1:7000/2",  # a cluster has only database 0
    "redis+cluster:///",
    "redis+cluster://h1:port/",
    "redis+cluster://h1:7000/?nonsense=1",
])
def test_a_bad_cluster_uri_is_refused_with_what_to_write(uri: str) -> None:
    with pytest.raises(InvalidRequest):
        parse_uri(uri)


def test_projects_spread_over_buckets_and_a_project_keeps_its_own() -> None:
    buckets = Counter(bucket(f"project-{n}") for n in range(20000))
    assert len(buckets) == BUCKETS
    assert max(buckets.values()) < 3 * 20000 / BUCKETS
    assert bucket("tenant") == bucket("tenant")
    assert home_of("zq:", 7) == "zq:{7}:"


def _slot_keys(cluster_: LocalCluster, prefix: str) -> list[str]:
    keys: list[str] = []
    for port in cluster_.masters():
        keys += cluster_.client(port).keys(prefix + "*")
    return keys


def test_every_key_of_a_project_is_in_its_home_slot(
    storage: RedisStorage, cluster: LocalCluster, clock: ManualClock
) -> None:
    metadata = {"_max_claim_count": 1, "_dead_letter_queue": "dlq"}
    projects = [f"tenant-{n}" for n in range(12)]
    for project in projects:
        storage.queues.create(project, "work", metadata)
        storage.messages.post(project, "work", [new_message({"n": n}) for n in range(3)],
                              client_id="c")
        rules = DeliveryRules(dead_letter=policy_from_metadata(metadata))
        claim = storage.claims.create(project, "work", ttl=30, grace=30, limit=2,
                                      client_id="c", rules=rules)
        assert claim is not None
        storage.subscriptions.create(project, "work", "http://example.com/hook", 3600, {})
        clock.advance(61)
        # The exhausted messages move to the dead letter queue, in their home.
        storage.claims.create(project, "work", ttl=30, grace=30, limit=3, client_id="c",
                              rules=rules)
        assert len(storage.messages.list(project, "dlq", limit=10, echo=True)) == 2
    prefix = storage.prefix
    homes = {storage._scripts.home(p) for p in projects}
    wide = {prefix + "homes", prefix + "layout"}
    for key in _slot_keys(cluster, prefix):
        if key in wide or key.startswith(cluster_events_home(prefix)):
            continue
        home = key[:key.index("}") + 2]
        assert home in homes, key
        assert key_slot(key.encode()) == key_slot(home.encode()), key
    assert sorted(storage._scripts.homes()) == sorted(homes)


def cluster_events_home(prefix: str) -> str:
    return cluster_book.events_home(prefix)


def _owner_and_other(cluster_: LocalCluster, slot: int) -> tuple[int, int]:
    client = cluster_.cluster_client()
    try:
        owner = client.nodes_manager.get_node_from_slot(slot).port
    finally:
        client.close()
    other = next(port for port in cluster_.masters() if port != owner)
    return owner, other


def _migrate_keys(cluster_: LocalCluster, source: int, target: int, slot: int,
                  count: int) -> int:
    node = cluster_.client(source)
    keys = node.execute_command("CLUSTER", "GETKEYSINSLOT", slot, count)
    if keys:
        node.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys)
    return len(keys)


def test_a_call_waits_while_its_slot_migrates_and_then_runs_whole(
    storage: RedisStorage, cluster: LocalCluster, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_book, "REDIRECT_PATIENCE", 60.0)
    storage.queues.create(project, "q", {})
    posted = storage.messages.post(project, "q", [new_message({"n": n}) for n in range(40)],
                                   client_id="c")
    home = storage._scripts.home(project)
    slot = key_slot(home.encode())
    source, target = _owner_and_other(cluster, slot)
    source_id, target_id = cluster.node_id(source), cluster.node_id(target)
    cluster.client(target).execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
    cluster.client(source).execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
    # Half the slot's keys are on the target now: a script run on either
    # node would find only some of the queue's keys.
    moved = _migrate_keys(cluster, source, target, slot, 20)
    assert moved == 20
    answers: list[object] = []
    claiming = threading.Thread(target=lambda: answers.append(storage.claims.create(
        project, "q", ttl=60, grace=60, limit=40, client_id="c")))
    claiming.start()
    time.sleep(1.0)
    assert claiming.is_alive() and answers == []  # refused, not run: retried
    while _migrate_keys(cluster, source, target, slot, 100):
        pass
    for port in (target, source):
        cluster.client(port).execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    claiming.join(30)
    assert not claiming.is_alive()
    claim = answers[0]
    assert claim is not None
    assert sorted(m.id for m in claim.messages) == sorted(posted)  # type: ignore[attr-defined]
    stats = storage.queues.stats(project, "q")
    assert (stats.free, stats.claimed) == (0, 40)
    assert Counter(e.kind for e in events_of(storage, project))[events.CLAIMED] == 40


def test_a_call_that_cannot_wait_longer_answers_unavailable_and_changes_nothing(
    storage: RedisStorage, cluster: LocalCluster, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_book, "REDIRECT_PATIENCE", 0.5)
    storage.queues.create(project, "q", {})
    storage.messages.post(project, "q", [new_message()], client_id="c")
    slot = key_slot(storage._scripts.home(project).encode())
    source, target = _owner_and_other(cluster, slot)
    source_id, target_id = cluster.node_id(source), cluster.node_id(target)
    cluster.client(target).execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
    cluster.client(source).execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
    try:
        with pytest.raises(StorageUnavailable):
            storage.claims.create(project, "q", ttl=60, grace=60, limit=5, client_id="c")
    finally:
        for port in (source, target):
            cluster.client(port).execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
    stats = storage.queues.stats(project, "q")
    assert (stats.free, stats.claimed) == (1, 0)


def test_the_log_holds_every_event_of_every_home_once_in_each_projects_order(
    cluster_uri: str, cluster: LocalCluster
) -> None:
    clock = ManualClock()
    writer = open_redis(cluster_uri, clock=clock)
    readers = [open_redis(cluster_uri, clock=clock) for _ in range(3)]
    projects = [f"log-{n}" for n in range(16)]
    posted: dict[str, list[str]] = {p: [] for p in projects}
    stop = threading.Event()
    seen: list[list[events.Event]] = [[] for _ in readers]  # type: ignore[name-defined]

    def read(index: int) -> None:
        after = None
        while not stop.is_set():
            page = readers[index].events.read(after=after, limit=50)
            seen[index] += page
            if page:
                after = page[-1].cursor

    threads = [threading.Thread(target=read, args=(n,)) for n in range(len(readers))]
    for thread in threads:
        thread.start()
    try:
        for round_ in range(8):
            for project in projects:
                posted[project] += writer.messages.post(
                    project, "q", [new_message({"r": round_})], client_id="c")
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    everything = writer.events.read(limit=10000)
    posts = [e for e in everything if e.kind == events.POSTED]
    assert Counter(e.message_id for e in posts) == Counter(
        m for ids in posted.values() for m in ids)  # each once
    for project in projects:
        assert [e.message_id for e in posts if e.project == project] == posted[project]
    cursors = [e.cursor for e in everything]
    assert cursors == sorted(cursors, key=writer.events.sort_key)
    for found in seen:  # every reader saw a prefix of the one log, in its order
        assert [e.cursor for e in found] == cursors[:len(found)]
    # Trimmed after export: the homes' copies go too.
    writer.events.trim(up_to=everything[-1].cursor)
    assert writer.events.read() == []
    client = cluster.cluster_client()
    try:
        for home in writer._scripts.homes():
            assert client.xlen(home + "events") == 0, home
    finally:
        client.close()
    for store in [writer, *readers]:
        store.close()


def test_gc_and_the_message_volume_cover_every_home(
    storage: RedisStorage, clock: ManualClock
) -> None:
    projects = [f"gc-{n}" for n in range(10)]
    assert len({storage._scripts.home(p) for p in projects}) > 1
    for project in projects:
        storage.messages.post(project, "q", [new_message(ttl=60), new_message(ttl=600)],
                              client_id="c")
    assert storage.queues.volume().free == 20
    clock.advance(61)
    assert storage.gc().messages == 10
    assert storage.queues.volume().free == 10
    expired = [e for e in storage.events.read(limit=1000) if e.kind == events.EXPIRED]
    assert sorted(e.project for e in expired) == sorted(projects)


def test_a_node_list_with_a_dead_node_still_reaches_the_cluster(cluster: LocalCluster) -> None:
    uri = f"redis+cluster://127.0.0.1:1,127.0.0.1:{cluster.ports[2]}/?prefix=zqtest-dead"
    store = open_redis(uri, clock=ManualClock())
    try:
        assert store.ping()
    finally:
        store.close()
    with pytest.raises(StorageUnavailable, match="Cannot use the Redis storage"):
        open_redis("redis+cluster://127.0.0.1:1/?socket_connect_timeout=1",
                   clock=ManualClock())


def test_wait_replicas_waits_for_the_replica_of_the_slots_master(
    cluster_uri: str, clock: ManualClock, project: str
) -> None:
    confirmed = open_redis(cluster_uri, clock=clock,
                           settings=RedisConfig(wait_replicas=1, wait_timeout=5))
    unconfirmable = open_redis(cluster_uri, clock=clock,
                               settings=RedisConfig(wait_replicas=2, wait_timeout=0.05))
    try:
        confirmed.queues.create(project, "q", {})
        confirmed.messages.post(project, "q", [new_message()], client_id="c")
        with pytest.raises(StorageUnavailable) as unconfirmed:
            unconfirmable.messages.post(project, "q", [new_message()], client_id="c")
        assert unconfirmed.value.description == NOT_CONFIRMED
        assert "1 of 2 replicas" in unconfirmed.value.detail
        assert confirmed.queues.stats(project, "q").total == 2  # it ran, unconfirmed
    finally:
        confirmed.close()
        unconfirmable.close()


def test_the_layout_is_marked_once_and_db_upgrade_has_nothing_to_convert(
    cluster_uri: str, clock: ManualClock
) -> None:
    assert upgrade_uri(cluster_uri, clock) == (None, LAYOUT)  # an empty prefix: marked
    store = open_redis(cluster_uri, clock=clock)
    try:
        store.messages.post("tenant", "q", [new_message()], client_id="c")
    finally:
        store.close()
    assert upgrade_uri(cluster_uri, clock) == (LAYOUT, LAYOUT)


def test_a_home_lost_from_the_list_is_listed_again_by_a_process_that_wrote_there(
    storage: RedisStorage, cluster: LocalCluster, project: str
) -> None:
    storage.messages.post(project, "q", [new_message()], client_id="c")
    home = storage._scripts.home(project)
    client = cluster.cluster_client()
    try:
        client.delete(storage.prefix + "homes")  # as a failover of its master may
        assert storage._scripts.homes() == [home]
        assert client.smembers(storage.prefix + "homes") == {str(bucket(project))}
    finally:
        client.close()
    assert storage.queues.volume().free == 1


def test_one_subscription_hears_the_wake_ups_of_every_master(
    storage: RedisStorage, cluster: LocalCluster
) -> None:
    """Scripts PUBLISH (broadcast over the cluster bus), not SPUBLISH: the worker's
    one subscription, on whichever node, hears every home's changes."""
    heard: set[tuple[str, str]] = set()
    changed = threading.Condition()

    def wake(project: str, queue: str) -> None:
        with changed:
            heard.add((project, queue))
            changed.notify_all()

    client = cluster.cluster_client()
    by_master: dict[int, str] = {}
    try:
        for n in range(200):
            project = f"wake-{n}"
            slot = key_slot(storage._scripts.home(project).encode())
            by_master.setdefault(client.nodes_manager.get_node_from_slot(slot).port, project)
    finally:
        client.close()
    assert len(by_master) == 3
    listener = storage.wakeups.listen(wake)
    assert isinstance(listener, ThreadedListener)
    try:
        assert listener.wait_connected(10)
        for project in by_master.values():
            storage.messages.post(project, "q", [new_message()], client_id="c")
        deadline = time.monotonic() + 10
        with changed:
            while not {(p, "q") for p in by_master.values()} <= heard:
                assert time.monotonic() < deadline, heard
                changed.wait(0.1)
    finally:
        listener.close()
