"""Threads racing to change queue metadata through the service, on every backend.

A PATCH reads the metadata, applies the patch and writes the result; a dead
letter setting is checked against the chain of dead letter queues first.
Whatever the interleaving: a PATCH that answered never lost its change to
another one, a refused one was refused with a Conflict (409), and no chain
of dead letter queues ever becomes a cycle. With pooling on and off.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from zq.config import Limits
from zq.errors import Conflict
from zq.pooling import SingleBackend
from zq.pooling.registry import PoolDef
from zq.pooling.resolver import CatalogPools
from zq.pooling.store import open_management
from zq.service import QueueService
from zq.storage.base import Storage

pytestmark = pytest.mark.slow

WRITERS = 8
KEY_ROUNDS = 3
CYCLE_ROUNDS = 10
POOL_URI = "test://the-backend-under-test"


@pytest.fixture(params=["single", "pooled"])
def service(request: pytest.FixtureRequest, storage: Storage,
            tmp_path: Path) -> Iterator[QueueService]:
    """The service over the backend, alone or as the one pool of a catalog."""
    if request.param == "single":
        yield QueueService(Limits(), SingleBackend(storage))
        return
    store = open_management(f"sqlite:///{tmp_path / 'management.sqlite3'}",
                            rng=random.Random(1))
    store.registry.put_pool(PoolDef("only", POOL_URI, 100))
    pools = CatalogPools(store, opener=lambda uri, clock: storage)
    try:
        yield QueueService(Limits(), pools)
    finally:
        store.close()  # the storage itself is the storage fixture's to close


def race(actions: list[Callable[[], Any]]) -> list[BaseException | None]:
    """Run the actions on threads released together; each one's error or None."""
    start = threading.Barrier(len(actions))
    outcomes: list[BaseException | None] = [None] * len(actions)

    def run(index: int) -> None:
        start.wait()
        try:
            actions[index]()
        except BaseException as error:  # reported by the test
            outcomes[index] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(actions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    return outcomes


def add(key: str, value: Any) -> list[dict[str, Any]]:
    return [{"op": "add", "path": f"/metadata/{key}", "value": value}]


def chain_from(service: QueueService, project: str, queue: str) -> list[str]:
    """The queues a message would visit from ``queue``; stops at a repeat."""
    seen = [queue]
    while True:
        target = service.queue_metadata(project, seen[-1]).get("_dead_letter_queue")
        if target is None:
            return seen
        seen.append(target)
        if target in seen[:-1]:
            return seen


def test_concurrent_patches_never_lose_a_key(service: QueueService) -> None:
    for _ in range(KEY_ROUNDS):
        patches_race_on_one_queue(service, f"p-{uuid.uuid4().hex}")


def patches_race_on_one_queue(service: QueueService, project: str) -> None:
    service.create_queue(project, "shared", {"kept": True})
    keys = [f"k{n}" for n in range(WRITERS)]
    outcomes = race([
        lambda key=key: service.patch_metadata(project, "shared", add(key, key))
        for key in keys
    ])
    stored = service.queue_metadata(project, "shared")
    assert stored["kept"] is True
    for key, outcome in zip(keys, outcomes, strict=True):
        if outcome is None:
            assert stored.get(key) == key, f"PATCH of {key} answered but its key was lost"
        else:
            assert isinstance(outcome, Conflict), repr(outcome)
            assert key not in stored
    assert any(outcome is None for outcome in outcomes)


def test_concurrent_dead_letter_patches_never_form_a_cycle(service: QueueService) -> None:
    cycles = [chain for chain in (
        patches_race_to_close_a_loop(service, f"p-{uuid.uuid4().hex}")
        for _ in range(CYCLE_ROUNDS)) if chain[-1] in chain[:-1]]
    assert not cycles


def patches_race_to_close_a_loop(service: QueueService, project: str) -> list[str]:
    """c0 -> c1, c1 -> c2 and c2 -> c0 at once; the chain from c0 after."""
    names = ["c0", "c1", "c2"]
    for name in names:
        service.create_queue(project, name, {})
    outcomes = race([
        lambda source=source, target=target: service.patch_metadata(
            project, source, add("_dead_letter_queue", target))
        for source, target in zip(names, names[1:] + names[:1], strict=True)
    ])
    for outcome in outcomes:
        assert outcome is None or isinstance(outcome, Conflict), repr(outcome)
    assert any(outcome is not None for outcome in outcomes)
    return chain_from(service, project, "c0")


def test_concurrent_creation_and_patch_never_form_a_cycle(service: QueueService) -> None:
    """A PUT that creates a queue with a dead letter queue races the PATCHes."""
    cycles = [chain for chain in (
        creation_races_to_close_a_loop(service, f"p-{uuid.uuid4().hex}")
        for _ in range(CYCLE_ROUNDS)) if chain[-1] in chain[:-1]]
    assert not cycles


def creation_races_to_close_a_loop(service: QueueService, project: str) -> list[str]:
    service.create_queue(project, "c0", {})
    service.create_queue(project, "c1", {})
    outcomes = race([
        lambda: service.patch_metadata(project, "c0", add("_dead_letter_queue", "c1")),
        lambda: service.patch_metadata(project, "c1", add("_dead_letter_queue", "c2")),
        lambda: service.create_queue(project, "c2", {"_dead_letter_queue": "c0"}),
    ])
    for outcome in outcomes:
        assert outcome is None or isinstance(outcome, Conflict), repr(outcome)
    return chain_from(service, project, "c0")


# -- the same races, interleaved on purpose: the other writer acts between the
# PATCH's read and its write (mongomock serializes every call, so threads
# alone rarely interleave there)


def interfere_once(queues: object, method: str, when: Callable[..., bool],
                   action: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``action`` once, after the first ``queues.method(...)`` that ``when`` picks."""
    original = getattr(queues, method)
    fired = threading.Event()

    def read(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if when(*args) and not fired.is_set():
            fired.set()
            action()
        return result

    monkeypatch.setattr(queues, method, read)


def test_a_write_between_read_and_write_is_kept(
    service: QueueService, storage: Storage, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    service.create_queue(project, "shared", {"kept": True})
    other = QueueService(Limits(), SingleBackend(storage))
    for method in ("read_metadata", "get_metadata"):  # whichever the PATCH reads with
        interfere_once(storage.queues, method, lambda project, queue: queue == "shared",
                       lambda: other.patch_metadata(project, "shared", add("theirs", 1)),
                       monkeypatch)
    shown = service.patch_metadata(project, "shared", add("mine", 2))
    assert shown["theirs"] == 1 and shown["mine"] == 2
    assert service.queue_metadata(project, "shared")["theirs"] == 1


def test_a_link_written_while_the_chain_is_checked_is_seen(
    service: QueueService, storage: Storage, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("c0", "c1", "c2"):
        service.create_queue(project, name, {})
    other = QueueService(Limits(), SingleBackend(storage))

    def close_the_loop() -> None:
        other.patch_metadata(project, "c1", add("_dead_letter_queue", "c2"))
        other.patch_metadata(project, "c2", add("_dead_letter_queue", "c0"))

    # c0 -> c1 is checked while c1 has no dead letter queue yet.
    interfere_once(storage.queues, "read_metadata",
                   lambda project, queue: queue == "c1", close_the_loop, monkeypatch)
    with pytest.raises(Conflict, match="cycle"):
        service.patch_metadata(project, "c0", add("_dead_letter_queue", "c1"))
    assert chain_from(service, project, "c0") == ["c0"]
    assert chain_from(service, project, "c1") == ["c1", "c2", "c0"]
