"""``zq serve`` as an operator sees it: defaults, start line, graceful stop."""

from __future__ import annotations

import pytest

from tests.e2e.server import START_LINE, ServerProcess, clean_environment, run_zq

pytestmark = pytest.mark.slow


def test_default_sqlite_in_the_data_directory_and_graceful_sigterm(tmp_path) -> None:
    env = clean_environment(tmp_path / "data")
    server = ServerProcess(tmp_path / "server.log", env, "--workers", "2")
    try:
        server.start()
        database = tmp_path / "data" / "zq" / "zq.sqlite3"
        assert database.exists()
        match = START_LINE.search(server.log())
        assert match is not None
        assert match.group(2) == f"sqlite:///{database}"
        assert match.group(3) == "2"
        assert server.url.startswith("http://127.0.0.1:")
    finally:
        status = server.stop()
    assert status == 0, server.log()
    assert "zq stopped" in server.log()
    assert "Traceback" not in server.log()

    # The same data directory serves `zq gc` without any flag.
    collected = run_zq("gc", env=env)
    assert collected.returncode == 0, collected.stderr
    assert collected.stdout.strip() == f"Removed 0 expired message(s) and 0 expired claim(s) from sqlite:///{database}."


def test_unreachable_storage_stops_serve_with_one_line(tmp_path) -> None:
    env = clean_environment(tmp_path / "data")
    result = run_zq("serve", "--port", "0", "--storage",
                    "postgresql://zq:pw@127.0.0.1:1/zq", env=env)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("zq: error: storage postgresql://zq:***@127.0.0.1:1/zq")
    assert "Traceback" not in result.stderr
