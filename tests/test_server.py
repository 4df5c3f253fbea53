"""zq.server without starting granian: settings and worker wiring."""

from __future__ import annotations

from pathlib import Path

import pytest

from zq.config import Config
from zq.errors import InvalidRequest
from zq.server import (
    announce,
    check_address_free,
    check_server_config,
    open_worker,
    prepare,
    prepare_management,
    prepare_storage,
)
from zq.startup import StartupError


def sqlite_config(tmp_path: Path, **gc: float) -> Config:
    return Config().with_overrides(
        storage={"uri": f"sqlite:///{tmp_path / 'zq.sqlite3'}"}, gc=gc or {"interval": 3600.0}
    )


def test_prepare_storage_migrates_sqlite_before_the_workers_start(tmp_path: Path) -> None:
    from zq.storage.sql import migrate

    config = sqlite_config(tmp_path)
    uri = prepare_storage(config)
    assert uri == config.storage.uri
    assert migrate.current_revision(uri) == migrate.head_revision()


def test_wait_replicas_on_a_storage_that_is_not_redis_is_refused(tmp_path: Path) -> None:
    config = sqlite_config(tmp_path).with_overrides(redis={"wait_replicas": 1})
    with pytest.raises(StartupError, match=r"wait_replicas = 1 cannot take effect.*not Redis"):
        prepare_storage(config)


def test_redis_settings_are_checked_when_read() -> None:
    from zq.config import ConfigError, load_config

    config = load_config(environ={"ZQ_REDIS_WAIT_REPLICAS": "2", "ZQ_REDIS_WAIT_TIMEOUT": "0.25"})
    assert (config.redis.wait_replicas, config.redis.wait_timeout_ms) == (2, 250)
    with pytest.raises(ConfigError, match="wait_replicas: must"):
        load_config(environ={"ZQ_REDIS_WAIT_REPLICAS": "-1"})
    with pytest.raises(ConfigError, match="wait_timeout: must be above 0"):
        load_config(environ={"ZQ_REDIS_WAIT_TIMEOUT": "0"})
    assert Config().with_overrides(redis={"wait_timeout": 0.0001}).redis.wait_timeout_ms == 1


def test_prepare_storage_creates_the_default_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    uri = prepare_storage(Config())
    assert uri == f"sqlite:///{tmp_path / 'xdg' / 'zq' / 'zq.sqlite3'}"
    assert (tmp_path / "xdg" / "zq" / "zq.sqlite3").is_file()


def test_a_worker_builds_its_own_storage_app_and_collector(tmp_path: Path) -> None:
    config = sqlite_config(tmp_path)
    prepare_storage(config)
    worker = open_worker(config)  # what each granian worker runs after the fork
    try:
        assert callable(worker.app)
        assert worker.collector is not None
        thread = worker.collector._thread
        assert thread is not None and thread.is_alive() and thread.daemon
    finally:
        worker.close()
    assert not thread.is_alive()


def pooled_config(tmp_path: Path, management: str = "") -> Config:
    return Config().with_overrides(
        pooling={"enabled": True, "management": management}, gc={"interval": 3600.0}
    )


def test_prepare_with_pooling_migrates_the_default_management_store_not_the_storage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zq.pooling import migrate

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    uri = prepare(pooled_config(tmp_path))
    store = tmp_path / "xdg" / "zq" / "zq-management.sqlite3"
    assert uri == f"sqlite:///{store}"
    assert migrate.current_revision(uri) == migrate.head_revision()
    assert not (tmp_path / "xdg" / "zq" / "zq.sqlite3").exists()  # storage unused


def test_prepare_without_pooling_prepares_the_storage(tmp_path: Path) -> None:
    config = sqlite_config(tmp_path)
    assert prepare(config) == config.storage.uri
    assert (tmp_path / "zq.sqlite3").is_file()


def test_an_unreachable_management_store_stops_the_master_in_one_line(tmp_path: Path) -> None:
    config = pooled_config(tmp_path, "postgresql://zq:s3cret@127.0.0.1:1/zq_management")
    with pytest.raises(StartupError) as raised:
        prepare_management(config)
    message = str(raised.value)
    assert message.startswith("management store postgresql://zq:***@127.0.0.1:1/zq_management")
    assert "s3cret" not in message and "\n" not in message


def test_a_pooled_worker_builds_its_resolver_admin_and_collector_over_every_pool(
    tmp_path: Path,
) -> None:
    from falcon import testing

    from zq.pooling.resolver import CatalogPools

    config = pooled_config(tmp_path, f"sqlite:///{tmp_path / 'management.sqlite3'}")
    prepare(config)
    worker = open_worker(config)
    try:
        assert isinstance(worker.pools, CatalogPools)
        client = testing.TestClient(worker.app)
        headers = {"Client-ID": "3381af92-2b9e-11e3-b191-71861300734c",
                   "X-Project-ID": "p", "X-Roles": "admin"}
        created = client.simulate_put(
            "/v2/pools/one", headers=headers,
            json={"uri": f"sqlite:///{tmp_path / 'one.sqlite3'}", "weight": 1},
        )
        assert created.status_code == 201, created.text  # the admin API is wired
        assert client.simulate_put("/v2/queues/q", headers=headers).status_code == 201
        assert worker.pools.pool_of("p", "q") == "one"
        # The collector asks for the pools on every round: the new one is there.
        assert worker.collector is not None
        assert worker.collector.collect_once() == 0
        assert set(worker.collector._storages()) == {"one"}
    finally:
        worker.close()
    assert worker.collector._thread is not None
    assert not worker.collector._thread.is_alive()


def test_the_start_line_names_pooling_and_the_management_store_without_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    config = pooled_config(tmp_path, "postgresql://zq:s3cret@db/zq_management")
    with caplog.at_level(logging.INFO, logger="zq.server"):
        announce(config, config.pooling.management, 8888)
    assert ("zq serving http://127.0.0.1:8888/v2 on the pools of management store "
            "postgresql://zq:***@db/zq_management with 2 worker(s)") in caplog.text
    assert "s3cret" not in caplog.text


def test_a_configured_storage_unused_under_pooling_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    config = pooled_config(tmp_path, f"sqlite:///{tmp_path / 'm.sqlite3'}").with_overrides(
        storage={"uri": "redis://:s3cret@cache/0"})
    with caplog.at_level(logging.INFO, logger="zq.server"):
        announce(config, config.pooling.management, 8888)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["[storage] uri redis://:***@cache/0 is not used: with pooling on, "
                        "queues live on the pools of the management store"]


def test_gc_interval_zero_starts_no_collector(tmp_path: Path) -> None:
    config = sqlite_config(tmp_path, interval=0.0)
    prepare_storage(config)
    worker = open_worker(config)
    try:
        assert worker.collector is None
    finally:
        worker.close()


def test_check_server_config_refuses_zero_threads() -> None:
    with pytest.raises(StartupError, match="threads must be at least 1"):
        check_server_config(Config().with_overrides(server={"threads": 0}))


def test_check_server_config_refuses_a_body_timeout_of_zero() -> None:
    with pytest.raises(StartupError, match="body_timeout must be above 0 seconds"):
        check_server_config(Config().with_overrides(server={"body_timeout": 0}))


def test_port_zero_is_resolved_once_for_every_worker() -> None:
    assert 0 < check_address_free("127.0.0.1", 0) <= 65535


def test_an_address_in_use_is_refused_in_one_line() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StartupError, match=f"cannot listen on 127.0.0.1:{port}: "
                                               "Address already in use"):
            check_address_free("127.0.0.1", port)


@pytest.mark.parametrize("uri", ["mongomock://demo", "sqlite://", "sqlite:///:memory:"])
def test_a_backend_in_one_process_memory_is_refused_with_several_workers(uri: str) -> None:
    # Each worker would hold its own queues: stats flipping between workers.
    config = Config().with_overrides(storage={"uri": uri}, server={"workers": 2})
    with pytest.raises(InvalidRequest, match="--workers 1"):
        check_server_config(config)
    check_server_config(config.with_overrides(server={"workers": 1}))


def test_a_pooled_worker_refuses_a_pool_in_one_process_memory(tmp_path: Path) -> None:
    from falcon import testing

    config = pooled_config(tmp_path, f"sqlite:///{tmp_path / 'management.sqlite3'}")
    headers = {"Client-ID": "3381af92-2b9e-11e3-b191-71861300734c",
               "X-Project-ID": "p", "X-Roles": "admin"}
    prepare(config)
    answers = {}
    for workers in (2, 1):
        worker = open_worker(config.with_overrides(server={"workers": workers}))
        try:
            answers[workers] = testing.TestClient(worker.app).simulate_put(
                "/v2/pools/memory", headers=headers,
                json={"uri": "mongomock://pool-demo", "weight": 1})
        finally:
            worker.close()
    assert answers[2].status_code == 400
    assert "2 worker processes" in answers[2].json["description"]
    assert answers[1].status_code == 201, answers[1].text
    # Registered under one worker, it stops a start with two.
    with pytest.raises(InvalidRequest, match="mongomock://pool-demo"):
        prepare(config.with_overrides(server={"workers": 2}))
