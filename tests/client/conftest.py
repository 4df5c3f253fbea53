"""zq.client against the real app in process: httpx's WSGI transport, a ManualClock.

The client's requests go through create_app exactly as over a socket, so
these tests check the client against the server's real answers; time is
the shared ManualClock (claim expiry crossed without sleeping).
"""

from __future__ import annotations

import httpx
import pytest

from tests.api.fixtures import app, config
from tests.backends import clock, project, storage, storage_factory
from zq.client import Client

__all__ = ["app", "clock", "config", "project", "storage", "storage_factory"]


@pytest.fixture(scope="session")
def backend_name() -> str:
    return "sqlite"


@pytest.fixture
def transport(app) -> httpx.WSGITransport:
    return httpx.WSGITransport(app=app)


@pytest.fixture
def client(transport, project) -> Client:
    with Client("http://zq.test", project=project, transport=transport) as made:
        yield made


@pytest.fixture
def other(transport, project) -> Client:
    with Client("http://zq.test", project=project, transport=transport) as made:
        yield made
