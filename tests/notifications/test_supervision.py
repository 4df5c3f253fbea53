"""The server's supervisor of its notifier process: restarts, backoff, the health status."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from zq.clock import ManualClock
from zq.config import Config
from zq.notifications.process import Supervisor, exit_reason
from zq.notifications.status import StatusFile


class FakeProcess:
    """A notifier process the test kills."""

    pids = iter(range(1000, 2000))

    def __init__(self) -> None:
        self.pid = next(self.pids)
        self.exitcode: int | None = None

    def is_alive(self) -> bool:
        return self.exitcode is None

    def join(self, timeout: float | None = None) -> None:
        pass

    def die(self, exitcode: int) -> None:
        self.exitcode = exitcode


@pytest.fixture
def spawned() -> list[FakeProcess]:
    return []


def supervisor(tmp_path: Path, clock: ManualClock, spawned: list[FakeProcess],
               **notifications: object) -> tuple[Supervisor, StatusFile]:
    config = Config().with_overrides(notifications=notifications)
    status = StatusFile(tmp_path / "notifier.json")

    def spawn(config: Config, metrics_dir: str | None) -> FakeProcess:
        spawned.append(FakeProcess())
        return spawned[-1]

    return Supervisor(config, None, status, clock=clock, spawner=spawn), status  # type: ignore[arg-type]


def test_a_dead_notifier_is_reported_and_restarted_after_a_bounded_backoff(
        tmp_path: Path, clock: ManualClock, spawned: list[FakeProcess],
        caplog: pytest.LogCaptureFixture) -> None:
    watcher, status = supervisor(tmp_path, clock, spawned)
    watcher._launch()  # start() without the thread: the test drives check()
    assert status.read() == {"state": "running", "pid": spawned[0].pid, "restarts": 0}
    caplog.set_level(logging.ERROR, "zq.notifications")
    spawned[0].die(1)
    watcher.check()
    assert status.read() == {"state": "down", "pid": spawned[0].pid, "restarts": 0,
                             "last_exit": "exit status 1", "restart_in_seconds": 1.0}
    assert f"notifier (pid {spawned[0].pid}) died (exit status 1)" in caplog.text
    clock.advance(0.9)
    watcher.check()
    assert len(spawned) == 1  # not yet
    clock.advance(0.1)
    watcher.check()
    assert len(spawned) == 2
    assert status.read()["state"] == "running" and status.read()["restarts"] == 1
    # Dying again at once doubles the wait, up to a minute.
    delays = []
    for _ in range(8):
        spawned[-1].die(-9)
        watcher.check()
        delays.append(status.read()["restart_in_seconds"])
        assert status.read()["last_exit"] == "killed by SIGKILL"
        clock.advance(delays[-1])
        watcher.check()
    assert delays == [2, 4, 8, 16, 32, 60, 60, 60]
    # A notifier that ran a minute is forgiven its earlier deaths.
    clock.advance(60)
    spawned[-1].die(1)
    watcher.check()
    assert status.read()["restart_in_seconds"] == 1.0


def test_stop_stops_the_notifier_and_says_so(tmp_path: Path, clock: ManualClock,
                                             spawned: list[FakeProcess]) -> None:
    watcher, status = supervisor(tmp_path, clock, spawned)
    watcher.start()
    spawned[0].die(0)  # a clean exit, as after SIGTERM
    watcher.stop()
    assert status.read()["state"] == "stopped"


def test_a_disabled_notifier_is_reported_as_such(tmp_path: Path, clock: ManualClock,
                                                 spawned: list[FakeProcess]) -> None:
    watcher, status = supervisor(tmp_path, clock, spawned, enabled=False)
    watcher.start()
    watcher.stop()
    assert spawned == [] and status.read() == {"state": "disabled", "restarts": 0}


def test_exit_reasons_and_an_unreadable_status() -> None:
    assert exit_reason(1) == "exit status 1"
    assert exit_reason(-15) == "killed by SIGTERM"
    assert StatusFile("/nonexistent/notifier.json").read() == {"state": "unknown"}
