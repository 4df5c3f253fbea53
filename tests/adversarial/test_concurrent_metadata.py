"""Concurrent PATCHes over HTTP: no answered change is lost, no dead letter cycle forms.

Clients race on the WSGI app over each real backend. A PATCH answers 200
with its change kept, or 409 with a title and a description; never a 200
whose change another PATCH overwrote, never a chain of dead letter queues
that loops.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import falcon
import falcon.testing
import pytest

from tests.api.helpers import Api
from tests.backends import backend_name, clock, storage, storage_factory
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config
from zq.storage.base import Storage

__all__ = ["backend_name", "clock", "storage", "storage_factory"]

WRITERS = 8
CYCLE_ROUNDS = 6


@pytest.fixture
def app(storage: Storage, clock: ManualClock) -> falcon.App:
    return create_app(Config(), storage=storage, clock=clock)


def add(key: str, value: Any) -> list[dict[str, Any]]:
    return [{"op": "add", "path": f"/metadata/{key}", "value": value}]


def at_once(calls: list[Any]) -> list[falcon.testing.Result]:
    """Run the calls on threads released together; their responses in order."""
    start = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        start.wait()
        results[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(result is not None for result in results)
    return results


def assert_refused_clearly(result: falcon.testing.Result) -> None:
    assert result.status_code == 409, (result.status_code, result.text)
    assert result.json["title"] and result.json["description"]


def test_concurrent_patches_keep_every_answered_key(app: falcon.App) -> None:
    api = Api(app, f"p-{uuid.uuid4().hex}")
    assert api.put("/v2/queues/shared").status_code == 201
    keys = [f"k{n}" for n in range(WRITERS)]
    results = at_once([
        lambda key=key: api.patch_metadata("shared", add(key, key)) for key in keys])
    stored = api.get("/v2/queues/shared").json
    for key, result in zip(keys, results, strict=True):
        if result.status_code == 200:
            assert stored.get(key) == key, f"PATCH of {key} answered 200 but the key was lost"
        else:
            assert_refused_clearly(result)
            assert key not in stored


def test_concurrent_dead_letter_patches_never_form_a_cycle(app: falcon.App) -> None:
    for _ in range(CYCLE_ROUNDS):
        patches_race_to_close_a_loop(Api(app, f"p-{uuid.uuid4().hex}"))


def patches_race_to_close_a_loop(api: Api) -> None:
    names = ["c0", "c1", "c2"]
    for name in names:
        api.put(f"/v2/queues/{name}")
    results = at_once([
        lambda source=source, target=target: api.patch_metadata(
            source, add("_dead_letter_queue", target))
        for source, target in zip(names, names[1:] + names[:1], strict=True)
    ])
    for result in results:
        if result.status_code != 200:
            assert_refused_clearly(result)
    links = {name: api.get(f"/v2/queues/{name}").json.get("_dead_letter_queue")
             for name in names}
    assert None in links.values(), f"dead letter cycle formed: {links}"
    assert sum(result.status_code == 200 for result in results) == 2
