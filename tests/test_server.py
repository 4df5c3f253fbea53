"""zq.server without starting granian: settings, worker wiring, body draining."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest

from zq.commands.options import CommandError
from zq.config import Config
from zq.server import (
    check_address_free,
    check_server_config,
    drain_unread_body,
    open_worker,
    prepare_storage,
)


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


def test_prepare_storage_creates_the_default_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    uri = prepare_storage(Config())
    assert uri == f"sqlite:///{tmp_path / 'xdg' / 'zq' / 'zq.sqlite3'}"
    assert (tmp_path / "xdg" / "zq" / "zq.sqlite3").is_file()


def collectors() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "zq-gc" and t.is_alive()}


def test_a_worker_builds_its_own_storage_app_and_collector(tmp_path: Path) -> None:
    config = sqlite_config(tmp_path)
    before = collectors()
    app, close_worker = open_worker(config, prepare_storage(config))  # in each worker
    [collector] = collectors() - before
    assert callable(app)
    assert collector.daemon
    close_worker()
    assert not collector.is_alive()


def test_gc_interval_zero_starts_no_collector(tmp_path: Path) -> None:
    config = sqlite_config(tmp_path, interval=0.0)
    before = collectors()
    _, close_worker = open_worker(config, prepare_storage(config))
    try:
        assert collectors() - before == set()
    finally:
        close_worker()


def test_check_server_config_refuses_zero_threads() -> None:
    with pytest.raises(CommandError, match="threads must be at least 1"):
        check_server_config(Config().with_overrides(server={"threads": 0}))


def lazy_app(environ: dict, start_response) -> list[bytes]:
    """Answers without reading the body, like an early 400."""
    start_response("400 Bad Request", [("Content-Type", "application/json")])
    return [b"{}"]


@pytest.mark.parametrize(("size", "limit", "left"), [(300_000, 1_000_000, 0),
                                                     (2_000, 1_000, 2_000)])
def test_unread_bodies_up_to_the_limit_are_drained(size: int, limit: int, left: int) -> None:
    body = io.BytesIO(b"x" * size)
    environ = {"CONTENT_LENGTH": str(size), "wsgi.input": body}
    result = drain_unread_body(lazy_app, limit)(environ, lambda *args: None)
    assert result == [b"{}"]
    assert len(body.read()) == left


def test_port_zero_is_resolved_once_for_every_worker() -> None:
    assert 0 < check_address_free("127.0.0.1", 0) <= 65535


def test_an_address_in_use_is_refused_in_one_line() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match=f"cannot listen on 127.0.0.1:{port}: "
                                               "Address already in use"):
            check_address_free("127.0.0.1", port)
