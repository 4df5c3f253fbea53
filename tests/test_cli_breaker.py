"""``zq breaker show|open|close``: wiring, output, errors and exit statuses."""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest

from zq import cli, events
from zq.storage import open_storage
from zq.storage.sql import migrate

PROJECT = "shop"
ON = {"_breaker_failure_ratio": 0.5}
ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("ZQ_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@pytest.fixture(params=["sqlite", "mongomock"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A storage the command and the test both open: an SQLite file, or a
    mongomock database (shared by name within the process)."""
    if request.param == "sqlite":
        made = f"sqlite:///{tmp_path / 'zq.sqlite3'}"
        migrate.upgrade(made)
    else:
        made = f"mongomock://cli-{uuid.uuid4().hex[:12]}"
    storage = open_storage(made)
    try:
        if not storage.has_breaker:
            pytest.skip("this driver runs no breaker yet (Storage.has_breaker)")
        storage.queues.create(PROJECT, "orders", dict(ON))
        storage.queues.create(PROJECT, "plain", {})
    finally:
        storage.close()
    return made


def run_zq(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = cli.main(list(argv))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def breaker(capsys: pytest.CaptureFixture[str], uri: str, action: str, queue: str,
            *extra: str) -> tuple[int, str, str]:
    return run_zq(capsys, "breaker", action, queue, "--project", PROJECT, "--storage", uri,
                  *extra)


def breaker_events(uri: str) -> list[dict]:
    storage = open_storage(uri)
    try:
        return [e.detail for e in storage.events.read(after=None, limit=1000)
                if e.kind == events.BREAKER]
    finally:
        storage.close()


def test_show_open_close_round_trip(capsys: pytest.CaptureFixture[str], uri: str) -> None:
    status, out, err = breaker(capsys, uri, "show", "orders")
    assert (status, err) == (0, "")
    # Since the queue's creation, where the backend knows it.
    assert re.fullmatch(rf"orders: breaker closed (since {ISO}|\(never tripped\))\n", out), out
    status, out, _ = breaker(capsys, uri, "open", "orders")
    assert status == 0 and re.fullmatch(rf"orders: breaker forced open since {ISO}\n", out), out
    status, out, _ = breaker(capsys, uri, "show", "orders", "--json")
    shown = json.loads(out)
    assert status == 0 and shown["state"] == "open" and shown["description"] is None
    assert re.fullmatch(ISO, shown["since"])
    status, out, _ = breaker(capsys, uri, "close", "orders")
    assert status == 0 and out.startswith("orders: breaker forced closed since ")
    assert [(d["previous"], d["state"], d["forced"]) for d in breaker_events(uri)] == [
        ("closed", "open", True), ("open", "closed", True)]


def test_show_of_a_breaker_that_is_off_says_how_to_turn_it_on(
        capsys: pytest.CaptureFixture[str], uri: str) -> None:
    status, out, _ = breaker(capsys, uri, "show", "plain")
    assert status == 0 and "breaker off" in out and "_breaker_failure_ratio" in out
    status, out, _ = breaker(capsys, uri, "show", "plain", "--json")
    assert status == 0 and json.loads(out) is None


@pytest.mark.parametrize(("action", "queue", "fragment"), [
    ("show", "ghost", "Queue 'ghost' does not exist."),
    ("open", "ghost", "Queue 'ghost' does not exist."),
    ("close", "plain", "is off: set _breaker_failure_ratio"),
])
def test_failures_are_one_line_with_status_1(
        capsys: pytest.CaptureFixture[str], uri: str, action: str, queue: str,
        fragment: str) -> None:
    status, out, err = breaker(capsys, uri, action, queue)
    assert status == 1 and out == ""
    assert err.startswith("zq: error: ") and err.count("\n") == 1 and fragment in err, err
    assert breaker_events(uri) == []


@pytest.mark.parametrize("argv", [
    ["breaker"], ["breaker", "show"], ["breaker", "reset", "orders", "--project", "p"],
    ["breaker", "open", "orders"], ["breaker", "show", "orders", "--project", "p", "--bogus"],
])
def test_bad_command_lines_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    status, _, err = run_zq(capsys, *argv)
    assert status == 2 and err.startswith("usage: zq breaker"), err


def test_a_malformed_queue_name_is_a_usage_error(
        capsys: pytest.CaptureFixture[str], uri: str) -> None:
    status, _, err = breaker(capsys, uri, "open", "no spaces")
    assert status == 2 and "usage: zq breaker open" in err


def test_help_shows_examples_and_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_zq(capsys, "breaker", "open", "--help")
    assert status == 0
    assert "zq breaker close orders --project shop" in out and "exit status" in out
