"""A failing backend's own error text never reaches a client; the log keeps it.

PostgreSQL's "number of parameters must be between 0 and 65535" used to be
the description of a 503. The failure is injected where each driver talks
to its backend, on every backend.
"""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from tests.api.helpers import Api

SECRET = "relation secret_table_x on host db-7.internal"


@pytest.fixture
def failing_backend(backend_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call to the backend fails with an error naming SECRET."""
    if backend_name in ("redis", "redis-cluster"):
        import redis

        def fail(*args: object, **kwargs: object) -> None:
            raise redis.ResponseError(SECRET)

        from zq.storage.redis import sending

        monkeypatch.setattr(redis.Redis, "execute_command", fail)
        monkeypatch.setattr(redis.RedisCluster, "execute_command", fail)
        # The scripts' own round trips (zq.storage.redis.sending.round_trip).
        monkeypatch.setattr(sending, "round_trip", fail)
    elif backend_name == "mongo":
        import mongomock
        import pymongo.errors

        def fail_mongo(*args: object, **kwargs: object) -> None:
            raise pymongo.errors.OperationFailure(SECRET)

        for method in ("find", "find_one", "insert_many", "insert_one", "update_one",
                       "find_one_and_update", "aggregate", "count_documents"):
            monkeypatch.setattr(mongomock.collection.Collection, method, fail_mongo)
    else:
        def fail_sql(*args: object, **kwargs: object) -> None:
            raise sa.exc.OperationalError("SELECT 1", {}, Exception(SECRET))

        monkeypatch.setattr(sa.engine.Connection, "execute", fail_sql)
        monkeypatch.setattr(sa.engine.Connection, "exec_driver_sql", fail_sql)


@pytest.mark.parametrize("request_line", [
    ("POST", "/v2/queues/q/messages", {"messages": [{"body": 1}]}),
    ("GET", "/v2/queues/q/messages", None),
    ("POST", "/v2/queues/q/claims", None),
    ("GET", "/v2/queues/q/stats", None),
])
def test_the_backend_error_is_logged_not_answered(
    api: Api, failing_backend: None, caplog: pytest.LogCaptureFixture,
    request_line: tuple[str, str, object],
):
    method, path, body = request_line
    with caplog.at_level(logging.ERROR, logger="zq"):
        result = api.request(method, path, json=body)
    assert result.status_code in (500, 503), result.text
    assert set(result.json) == {"title", "description"}
    assert SECRET not in result.text
    assert "secret" not in result.text.lower()
    assert SECRET in caplog.text
