"""An encrypting queue through python-zaqarclient and a real ``zq serve``."""

from __future__ import annotations

import base64
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from zaqarclient.queues.client import Client

from tests.e2e.server import ServerProcess, clean_environment

pytestmark = pytest.mark.slow

FLAG = "_enable_encrypt_messages"


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    """Two workers on a SQLite file, with keys given in the environment."""
    tmp = tmp_path_factory.mktemp("e2e-encryption")
    env = clean_environment(tmp / "data")
    env["ZQ_ENCRYPTION_KEYS"] = f"k1:{base64.b64encode(os.urandom(32)).decode()}"
    env["ZQ_ENCRYPTION_FINGERPRINT_KEY"] = base64.b64encode(os.urandom(32)).decode()
    database = tmp / "zq.sqlite3"
    process = ServerProcess(tmp / "server.log", env, "--workers", "2",
                            "--storage", f"sqlite:///{database}")
    try:
        yield process.start(), database
    finally:
        process.stop()


def test_zaqarclient_sets_the_flag_and_reads_plaintext_of_sealed_bodies(keyed_server) -> None:
    server, database = keyed_server
    conf = {"auth_opts": {"backend": "noauth",
                          "options": {"os_project_id": f"e2e-{uuid.uuid4().hex}"}}}
    client = Client(server.url, version=2, conf=conf)
    queue = client.queue(f"vault-{uuid.uuid4().hex[:8]}", force_create=True)
    shown = queue.metadata(force_reload=True)
    assert shown[FLAG] is False
    assert queue.metadata(new_meta={**shown, FLAG: True})[FLAG] is True

    queue.post([{"body": {"pin": "kiwi-8642", "n": n}} for n in range(2)])
    assert [m.body for m in queue.messages(echo=True)] == [
        {"pin": "kiwi-8642", "n": 0}, {"pin": "kiwi-8642", "n": 1}]
    claimed = list(queue.claim(ttl=60, grace=60, limit=2))
    assert [m.body["n"] for m in claimed] == [0, 1]

    with sqlite3.connect(database) as conn:
        bodies = [row[0] for row in conn.execute(
            "SELECT body FROM messages WHERE queue = ?", (queue.name,))]
        events = " ".join(str(row) for row in conn.execute("SELECT * FROM events"))
    assert len(bodies) == 2
    assert all(body.startswith("zqe2:k1:") and "kiwi" not in body for body in bodies)
    # "kiwi" has letters no hex id or fingerprint holds ("8642" once turned up
    # inside a fingerprint by chance).
    assert "kiwi" not in events
