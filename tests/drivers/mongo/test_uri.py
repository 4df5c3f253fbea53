"""Storage URIs: mongomock://NAME is one shared in-memory store per NAME."""

from __future__ import annotations

import uuid

import pytest

from tests.drivers.mongo.helpers import bodies
from tests.drivers.mongo.session import with_database
from zq.clock import ManualClock
from zq.errors import InvalidRequest
from zq.storage import open_storage
from zq.storage.mongo.connection import drop_mock


@pytest.fixture
def name():
    name = f"uri-{uuid.uuid4().hex}"
    yield name
    drop_mock(name)


def test_same_name_shares_one_store_and_close_keeps_it(name):
    clock = ManualClock()
    first = open_storage(f"mongomock://{name}", clock=clock)
    (mid,) = first.messages.post("p", "q", bodies(1), client_id=None)
    first.close()
    second = open_storage(f"mongomock://{name}", clock=clock)
    assert second.messages.get("p", "q", mid).id == mid
    other = open_storage(f"mongomock://{name}-other", clock=clock)
    assert other.messages.get_many("p", "q", [mid]) == []
    drop_mock(f"{name}-other")


def test_mongomock_uri_needs_a_name():
    with pytest.raises(InvalidRequest):
        open_storage("mongomock://")


def test_ping_answers_on_mongomock(name):
    assert open_storage(f"mongomock://{name}").ping() is True


def test_test_database_replaces_the_uri_path_and_keeps_options():
    assert (with_database("mongodb://a:1,b:2/old?replicaSet=rs0", "zq_test_x")
            == "mongodb://a:1,b:2/zq_test_x?replicaSet=rs0")
