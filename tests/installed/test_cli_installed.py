"""Every command of the installed ``zq`` console script, from outside the checkout.

Assertions are on exit statuses, files and figures rather than on the
wording of messages, so that rewording a message does not break them.
"""

from __future__ import annotations

import json
import re
import tomllib
import uuid
from pathlib import Path

import httpx
import pytest

from tests.installed.conftest import Installed, outside_env
from tests.test_cli import COMMANDS

pytestmark = pytest.mark.slow


def test_zq_help_lists_every_command(zq) -> None:
    shown = zq("--help")
    assert shown.returncode == 0, shown.stderr
    for command in {words[0] for words in COMMANDS}:
        assert re.search(rf"^\s+{command}\s", shown.stdout, re.M), command
    assert "unavailable commands" not in shown.stdout
    version = zq("--version")
    assert version.returncode == 0 and version.stdout.startswith("zq ")


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_examples(zq, words: list[str]) -> None:
    shown = zq(*words, "--help")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"usage: zq {' '.join(words)}")
    assert "example" in shown.stdout.lower()


def test_python_dash_m_zq_is_the_same_program(installed: Installed, outside: Path) -> None:
    import subprocess

    done = subprocess.run([str(installed.python), "-m", "zq", "--version"], cwd=outside,
                          env=outside_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("zq "), done.stderr


def test_tokens_are_added_listed_used_and_revoked(zq, serve, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    added = zq("token", "add", "--project", "tenant-a", "--role", "admin", "--file", str(tokens))
    assert added.returncode == 0, added.stderr
    token = re.search(r"token:\s+(\S+)", added.stdout).group(1)
    token_id = re.search(r"id:\s+(\S+)", added.stdout).group(1)
    listed = zq("token", "list", "--file", str(tokens))
    assert listed.returncode == 0 and token_id in listed.stdout and token not in listed.stdout

    server = serve("--workers", "1", "--storage", f"sqlite:///{tmp_path / 'zq.sqlite3'}",
                   env={"ZQ_AUTH_STRATEGY": "token", "ZQ_AUTH_TOKENS_FILE": str(tokens)},
                   ping_headers={"X-Auth-Token": token, "X-Project-ID": "tenant-a"})
    headers = {"Client-ID": str(uuid.uuid4())}
    url = f"{server.url}/v2/queues"
    assert httpx.get(url, headers=headers, trust_env=False).status_code == 401
    ok = httpx.get(url, headers={**headers, "X-Auth-Token": token}, trust_env=False)
    assert ok.status_code == 200, ok.text

    revoked = zq("token", "revoke", token_id, "--file", str(tokens))
    assert revoked.returncode == 0, revoked.stderr
    gone = httpx.get(url, headers={**headers, "X-Auth-Token": token}, trust_env=False)
    assert gone.status_code == 401
    assert zq("token", "revoke", token_id, "--file", str(tokens)).returncode == 1


def test_db_upgrade_of_storage_and_management_store(zq, tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'zq.sqlite3'}"
    management = f"sqlite:///{tmp_path / 'management.sqlite3'}"
    first = zq("db", "upgrade", "--storage", storage)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "zq.sqlite3").is_file()
    again = zq("db", "upgrade", "--storage", storage)
    assert again.returncode == 0 and again.stdout != first.stdout  # created, then current
    managed = zq("db", "upgrade", "--management", management)
    assert managed.returncode == 0, managed.stderr
    assert (tmp_path / "management.sqlite3").is_file()
    missing = zq("db", "upgrade", "--storage", f"sqlite:///{tmp_path / 'no' / 'zq.sqlite3'}")
    assert missing.returncode == 1 and not (tmp_path / "no").exists()


def test_config_shows_settings_and_masks_secrets(zq) -> None:
    shown = zq("config", "--storage", "postgresql://zq:pa/ss@db/zq",
               extra_env={"ZQ_SIGNED_URLS_SECRET_KEY": "hmac-secret", "ZQ_SERVER_PROT": "1"})
    assert shown.returncode == 0, shown.stderr
    assert "pa/ss" not in shown.stdout and "hmac-secret" not in shown.stdout
    settings = tomllib.loads(shown.stdout)
    assert settings["server"]["port"] == 8888
    assert "ZQ_SERVER_PROT" in shown.stderr and "ZQ_SERVER_PORT" in shown.stderr


def test_serve_gc_export_and_stats_on_a_small_dataset(zq, serve, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'zq.sqlite3'}"
    server = serve("--workers", "2", "--storage", uri)
    http = httpx.Client(base_url=f"{server.url}/v2", trust_env=False, timeout=30, headers={
        "Client-ID": str(uuid.uuid4()), "X-Project-ID": "analysts"})
    assert http.put("/queues/orders", json={
        "_max_claim_count": 1, "_dead_letter_queue": "orders-dlq"}).status_code == 201
    posted = http.post("/queues/orders/messages", json={"messages": [
        {"body": {"order": n}, "ttl": 600} for n in range(3)]})
    assert posted.status_code == 201, posted.text
    claimed = http.post("/queues/orders/claims?limit=10", json={"ttl": 60, "grace": 60})
    messages = claimed.json()["messages"]
    assert len(messages) == 3
    assert http.delete(messages[0]["href"].removeprefix("/v2")).status_code == 204
    assert http.delete(claimed.headers["Location"].split("/v2", 1)[1]).status_code == 204
    # The two left were claimed once: the next claim dead letters them.
    assert http.post("/queues/orders/claims", json={"ttl": 60, "grace": 60}).status_code == 204
    assert server.stop() == 0

    collected = zq("gc", "--storage", uri)
    assert collected.returncode == 0, collected.stderr
    assert re.search(r"\b0\b", collected.stdout)  # nothing had expired

    dataset = tmp_path / "events"
    exported = zq("events", "export", "--to", str(dataset), "--storage", uri, "--settle", "0")
    assert exported.returncode == 0, exported.stderr
    assert list(dataset.rglob("*.parquet"))

    stats = zq("stats", "--events", str(dataset), "--format", "json", timeout=600)
    assert stats.returncode == 0, stats.stderr[-3000:]
    tables = json.loads(stats.stdout)
    rows = [row for table in tables.values() for row in table if row.get("queue") == "orders"]
    assert any(row.get("posted") == 3 for row in rows), rows
    assert any(row.get("deleted") == 1 for row in rows), rows
    assert any(row.get("dead_lettered") == 2 for row in rows), rows
