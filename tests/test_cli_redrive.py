"""``zq redrive``: wiring, help, filters, pacing, errors, and Ctrl-C mid-run."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zq import cli
from zq.commands import redrive as command
from zq.errors import MessageNotFound
from zq.events import REDRIVEN, fingerprint
from zq.poison import moves
from zq.storage import open_storage
from zq.storage.records import NewMessage
from zq.storage.sql import migrate

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "shop"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("ZQ_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@pytest.fixture
def uri(tmp_path: Path) -> str:
    made = f"sqlite:///{tmp_path / 'zq.sqlite3'}"
    migrate.upgrade(made)
    return made


def dead_letter(uri: str, source: str, count: int, *, start: int = 0,
                reason: str = "rejected") -> list[str]:
    """Post ``count`` messages to ``source`` and move them into ``orders-dlq``."""
    storage = open_storage(uri)
    try:
        posted = []
        for first in range(start, start + count, 500):
            bodies = [json.dumps({"n": n}) for n in range(first, min(start + count, first + 500))]
            ids = storage.messages.post(
                PROJECT, source, [NewMessage(b, 3600, 0, fingerprint(b)) for b in bodies],
                client_id=None)
            move = (moves.rejected("orders-dlq", None, "KeyError") if reason == "rejected"
                    else moves.dead_lettered("orders-dlq", None))
            assert storage.messages.move(PROJECT, source, ids, move, client_id=None) == ids
            posted += ids
        return posted
    finally:
        storage.close()


def places(uri: str, ids: list[str], queues: tuple[str, ...]) -> dict[str, list[str]]:
    """For each id, the queues it is alive in."""
    storage = open_storage(uri)
    try:
        found = {}
        for message_id in ids:
            found[message_id] = []
            for queue in queues:
                try:
                    storage.messages.get(PROJECT, queue, message_id)
                except MessageNotFound:
                    continue
                found[message_id].append(queue)
        return found
    finally:
        storage.close()


def redriven_events(uri: str) -> list[str]:
    storage = open_storage(uri)
    try:
        found, after = [], None
        while page := storage.events.read(after=after, limit=1000):
            found += [e.message_id for e in page if e.kind == REDRIVEN]
            after = page[-1].cursor
        return found
    finally:
        storage.close()


def run_zq(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = cli.main(list(argv))
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_is_wired_in_the_cli() -> None:
    assert "zq.commands.redrive" in cli.COMMAND_MODULES
    parser = cli.build_parser()
    args = parser.parse_args(["redrive", "q", "--project", "p"])
    assert args.handler is command.run


def test_help_shows_examples_and_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_zq(capsys, "redrive", "--help")
    assert status == 0
    assert "zq redrive orders-dlq --project shop --dry-run" in out
    assert "130 stopped by Ctrl-C" in out


def test_dry_run_counts_per_destination_and_moves_nothing(
        capsys: pytest.CaptureFixture[str], uri: str) -> None:
    orders = dead_letter(uri, "orders", 3)
    dead_letter(uri, "refunds", 2, start=3)
    status, out, _ = run_zq(capsys, "redrive", "orders-dlq", "--project", PROJECT,
                            "--storage", uri, "--dry-run")
    assert status == 0
    assert out.strip() == ("Dry run: 5 message(s) of orders-dlq would be redriven "
                           "(orders 3, refunds 2); nothing moved.")
    assert all(q == ["orders-dlq"] for q in places(uri, orders, ("orders", "orders-dlq"))
               .values())


def test_redrive_pages_through_a_queue_larger_than_a_page(
        capsys: pytest.CaptureFixture[str], uri: str) -> None:
    posted = dead_letter(uri, "orders", 450)  # more than two pages of 200
    status, out, err = run_zq(capsys, "redrive", "orders-dlq", "--project", PROJECT,
                              "--storage", uri)
    assert status == 0
    assert re.fullmatch(r"Redrove 450 of 450 matched message\(s\) from orders-dlq "
                        r"\(orders 450\) in [0-9.]+ s \([0-9]+/s\)\.\n", out)
    assert "redriven" in err and "/450" in err  # the progress bar
    assert set(map(tuple, places(uri, posted, ("orders", "orders-dlq")).values())) == {
        ("orders",)}
    assert sorted(redriven_events(uri)) == sorted(posted)


def test_filters_limit_and_to(capsys: pytest.CaptureFixture[str], uri: str) -> None:
    rejected = dead_letter(uri, "orders", 4)
    exhausted = dead_letter(uri, "orders", 2, start=4, reason="max_claim_count")
    status, out, _ = run_zq(capsys, "redrive", "orders-dlq", "--project", PROJECT,
                            "--storage", uri, "--reason", "max_claim_count",
                            "--from", "orders", "--to", "orders-retry", "--create")
    assert status == 0 and "(orders-retry 2)" in out and "Created orders-retry." in out
    status, out, _ = run_zq(capsys, "redrive", "orders-dlq", "--project", PROJECT,
                            "--storage", uri, "--limit", "3")
    assert status == 0 and out.startswith("Redrove 3 of 3 matched")
    where = places(uri, rejected + exhausted, ("orders", "orders-retry", "orders-dlq"))
    assert [where[i] for i in exhausted] == [["orders-retry"]] * 2
    assert [where[i] for i in rejected] == [["orders"]] * 3 + [["orders-dlq"]]
    wanted = fingerprint(json.dumps({"n": 3}))
    status, out, _ = run_zq(capsys, "redrive", "orders-dlq", "--project", PROJECT,
                            "--storage", uri, "--fingerprint", wanted)
    assert status == 0 and out.startswith("Redrove 1 of 1 matched")


@pytest.mark.parametrize("argv, status, fragment", [
    (["--fingerprint", "nothex"], 2,
     "zq redrive: error: --fingerprint 'nothex' is not a fingerprint"),
    (["--fingerprint", "12"], 2, "16 lowercase hex digits"),
    (["--rate", "fast"], 2, "argument --rate: 'fast' is not a rate"),
    (["--rate", "0"], 2, "is not a rate"),
    (["--limit", "-3"], 2, "argument --limit"),
    (["--reason", "bored"], 2, "argument --reason: invalid choice"),
    (["--to", "a/b"], 2, "zq redrive: error: --to may only contain"),
    (["--from", "x" * 65], 2, "--from may not be more than 64 characters"),
    (["--to", "orders-dlq"], 2, "dead letter queue itself"),
    (["--bogus"], 2, "zq redrive: error: unrecognized arguments: --bogus"),
])
def test_bad_flags_are_one_line_errors(capsys: pytest.CaptureFixture[str], uri: str,
                                       argv: list[str], status: int, fragment: str) -> None:
    got, _, err = run_zq(capsys, "redrive", "orders-dlq", "--project", PROJECT,
                         "--storage", uri, *argv)
    assert got == status
    assert fragment in err
    assert "Traceback" not in err
    if status == 1:
        assert len(err.strip().splitlines()) == 1
    else:  # the command's own usage, not zq's
        assert err.startswith("usage: zq redrive "), err


def test_a_missing_project_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_zq(capsys, "redrive", "orders-dlq")
    assert status == 2 and "--project" in err


def test_rate_paces_the_pages(uri: str) -> None:
    dead_letter(uri, "orders", 30)
    clock = [0.0]
    waited = []

    class Args:
        dlq, project, to, reason, source, fingerprint = "orders-dlq", PROJECT, None, None, \
            None, None
        dry_run, rate, limit, create = False, 10.0, None, False

    from zq.config import Limits
    from zq.pooling import SingleBackend
    from zq.service import QueueService

    storage = open_storage(uri)
    service = QueueService(Limits(), SingleBackend(storage))
    runner = command.Redrive(service, Args(), io.StringIO(), io.StringIO(),
                             monotonic=lambda: clock[0])

    def wait(seconds: float) -> bool:  # the injected clock moves instead of sleeping
        waited.append(round(seconds, 3))
        clock[0] += seconds
        return False

    runner.stop.wait = wait  # type: ignore[method-assign]
    assert runner.run() == 0
    storage.close()
    # Pages of 10 at 10/s: one second between pages.
    assert runner.totals.pages >= 3 and waited[:2] == [1.0, 1.0]


def test_ctrl_c_stops_cleanly_without_losing_or_doubling(uri: str, tmp_path: Path) -> None:
    posted = dead_letter(uri, "orders", 400)
    argv = [sys.executable, "-m", "zq", "redrive", "orders-dlq", "--project", PROJECT,
            "--storage", uri, "--rate", "40/s"]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ZQ_")},
           "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(tmp_path / "data")}
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        first = process.stderr.readline()  # the first progress line: a page moved
        assert "redriven" in first, first
        time.sleep(1.5)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert out.startswith("Interrupted: Redrove "), out
    moved = int(re.search(r"Redrove ([0-9]+) of", out).group(1))
    assert 0 < moved < len(posted)
    where = places(uri, posted, ("orders", "orders-dlq"))
    assert all(len(queues) == 1 for queues in where.values())  # none lost, none in two
    assert sum(q == ["orders"] for q in where.values()) == moved
    assert len(redriven_events(uri)) == moved
    # Running it again finishes the walk; no message is redriven twice.
    again = subprocess.run(argv[:-2], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert all(q == ["orders"] for q in places(uri, posted, ("orders", "orders-dlq")).values())
    assert sorted(redriven_events(uri)) == sorted(posted)


def exists(uri: str, queue: str) -> bool:
    storage = open_storage(uri)
    try:
        return storage.queues.exists(PROJECT, queue)
    finally:
        storage.close()


def test_a_dead_letter_queue_that_does_not_exist_is_an_error(
        capsys: pytest.CaptureFixture[str], uri: str) -> None:
    dead_letter(uri, "orders", 2)
    status, out, err = run_zq(capsys, "redrive", "orders-dlg", "--project", PROJECT,
                              "--storage", uri)
    assert status == 1 and out == ""
    assert err.strip() == ("zq: error: Queue 'orders-dlg' does not exist, so there are no "
                           "dead letters to redrive from it; check the name and the project.")
    assert not exists(uri, "orders-dlg")


def test_an_empty_dead_letter_queue_says_so(capsys: pytest.CaptureFixture[str],
                                            uri: str) -> None:
    posted = dead_letter(uri, "orders", 1)
    argv = ("redrive", "orders-dlq", "--project", PROJECT, "--storage", uri)
    status, out, _ = run_zq(capsys, *argv, "--from", "refunds")
    assert status == 0
    assert out == ("orders-dlq holds 1 unclaimed message(s), but none matches the filters: "
                   "nothing moved.\n")
    assert run_zq(capsys, *argv)[0] == 0
    assert places(uri, posted, ("orders", "orders-dlq")) == {posted[0]: ["orders"]}
    status, out, err = run_zq(capsys, *argv)
    assert status == 0 and err == ""  # no bar at 0/0
    assert out == "orders-dlq holds no messages to redrive (none unclaimed): nothing moved.\n"


def test_a_missing_destination_is_created_only_with_create(
        capsys: pytest.CaptureFixture[str], uri: str) -> None:
    posted = dead_letter(uri, "orders", 2)
    argv = ("redrive", "orders-dlq", "--project", PROJECT, "--storage", uri)
    status, out, err = run_zq(capsys, *argv, "--to", "orders-retyr")
    assert status == 1 and out == ""
    assert "Queue 'orders-retyr' does not exist" in err and "--create" in err
    assert not exists(uri, "orders-retyr")
    status, out, _ = run_zq(capsys, *argv, "--to", "orders-retry", "--create", "--dry-run")
    assert status == 0
    assert out == ("Dry run: 2 message(s) of orders-dlq would be redriven (orders-retry 2); "
                   "would create orders-retry; nothing moved.\n")
    assert not exists(uri, "orders-retry")
    status, out, _ = run_zq(capsys, *argv, "--to", "orders-retry", "--create")
    assert status == 0 and out.rstrip().endswith("(orders-retry 2) in " + out.split(" in ")[1]
                                                  .rstrip()) and "Created orders-retry." in out
    assert set(map(tuple, places(uri, posted, ("orders-retry", "orders-dlq")).values())) == {
        ("orders-retry",)}


def paced_run(uri: str, **options: object) -> tuple[command.Redrive, str, str]:
    """A run through the service with an injected clock: the service takes no time."""
    from zq.config import Limits
    from zq.pooling import SingleBackend
    from zq.service import QueueService

    clock = [0.0]

    class Args:
        dlq, project, to, reason, source, fingerprint = "orders-dlq", PROJECT, None, None, \
            None, None
        dry_run, rate, limit, create = False, None, None, False

    for name, value in options.items():
        setattr(Args, name, value)
    storage = open_storage(uri)
    out, err = io.StringIO(), io.StringIO()
    runner = command.Redrive(QueueService(Limits(), SingleBackend(storage)), Args(), out, err,
                             monotonic=lambda: clock[0])

    def wait(seconds: float) -> bool:
        clock[0] += seconds
        return False

    runner.stop.wait = wait  # type: ignore[method-assign]
    try:
        assert runner.run() == 0
    finally:
        storage.close()
    return runner, out.getvalue(), err.getvalue()


def test_the_progress_bar_counts_to_the_limit_at_the_paced_rate(uri: str) -> None:
    dead_letter(uri, "orders", 370)
    # It showed 100/370 at 5573/s: the queue's size, and the first page's burst.
    _, out, err = paced_run(uri, rate=100.0, limit=150)
    assert err.splitlines() == ["[####################..........] 100/150 redriven, 100/s",
                                "[##############################] 150/150 redriven, 100/s"]
    assert out.endswith(" in 1.5 s (100/s).\n")


def test_with_a_filter_the_bar_shows_an_upper_bound(uri: str) -> None:
    dead_letter(uri, "bulk1", 200)
    dead_letter(uri, "bulk2", 200, start=200)
    # It showed 30/400: neither the limit nor the filter.
    _, _, err = paced_run(uri, source="bulk2", limit=30)
    assert err.splitlines()[-1].startswith("[##############################] 30 of at most 30 ")
    _, out, err = paced_run(uri, source="bulk1", rate=1000.0)
    assert err.splitlines()[-1].startswith("[################..............] 200 of at most "
                                           "370 redriven")
    assert out.startswith("Redrove 200 of 200 matched")
