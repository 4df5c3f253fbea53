"""Passwords never reach a message: one function finds them, whatever they hold."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest

from zq.analytics.export import backend_id
from zq.storage.uri import REDACTED, redact, without_password

ROOT = Path(__file__).resolve().parents[2]

# Passwords as users paste them (raw) and as URL-encoding gives them.
NASTY = ["p@ss", "p:ss", "p/ss", "p%ss", "a@b:c/d%e", "@:/%", "p?ss", "p#ss", "::", "@@"]
SERVERS = [
    ("postgresql", "db.example.com:5432", "/zq"),
    ("mysql+pymysql", "10.0.0.7", "/zq?charset=utf8mb4"),
    ("redis", "[::1]:6379", "/0?prefix=zq"),
    ("rediss", "cache", ""),
    ("mongodb", "h1:27017,h2:27017", "/zq?replicaSet=rs0"),
    ("postgresql", "db1:5432,db2:5433", "/zq?target_session_attrs=read-write"),
    ("redis+sentinel", "s1:26379,s2:26380", "/mymaster/0?prefix=zq"),
]


@pytest.mark.parametrize("password", NASTY + [quote(p, safe="") for p in NASTY])
@pytest.mark.parametrize(("scheme", "host", "tail"), SERVERS)
def test_redact_hides_any_password_and_keeps_the_rest(password, scheme, host, tail):
    uri = f"{scheme}://zq-user:{password}@{host}{tail}"
    shown = redact(uri)
    assert shown == f"{scheme}://zq-user:{REDACTED}@{host}{tail}"
    assert without_password(uri) == f"{scheme}://zq-user@{host}{tail}"


@pytest.mark.parametrize("uri", [
    "sqlite:////var/lib/zq/a@b:c.sqlite3",  # '@' and ':' in a path are no password
    "sqlite:///relative.db",
    "redis://127.0.0.1:6379/0?prefix=a@b",
    "postgresql://zq@db/zq",  # a user without password
    "mongomock://demo",
    "not a uri",
])
def test_uris_without_a_password_are_shown_unchanged(uri):
    assert redact(uri) == uri
    assert without_password(uri) == uri


def test_an_empty_password_is_masked_too():
    assert redact("redis://:@host/0") == "redis://:***@host/0"


def test_backend_ids_ignore_the_password_and_stay_what_they_were():
    # Ids name the cursors of existing datasets: they must not change. These
    # are the ids the release before the shared redaction computed.
    assert backend_id("sqlite:////tmp/x.db") == "sqlite-6c8a9b56fcb2"
    assert backend_id("redis://:pw@127.0.0.1:6379/0?prefix=a") == "redis-57fb215b3c78"
    assert backend_id("postgresql://u:p@h/db") == backend_id("postgresql://u:other@h/db")
    assert backend_id("postgresql://u:p/x@h/db") == backend_id("postgresql://u@h/db")


def test_one_function_redacts_uris_everywhere():
    # Every message that shows a URI goes through zq.storage.uri: nothing
    # else takes a password apart (urllib's .password, SQLAlchemy's
    # hide_password) or writes its own redaction.
    offenders = []
    for path in (ROOT / "zq").rglob("*.py"):
        if path == ROOT / "zq" / "storage" / "uri.py":
            continue
        text = path.read_text()
        if re.search(r"hide_password=True|\.password\b.*\*\*\*|def redact|\"\*\*\*\"", text):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
