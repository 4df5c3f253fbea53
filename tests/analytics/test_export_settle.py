"""Export never skips an event whose transaction committed after a later one was read."""

from __future__ import annotations

import pytest

from tests.analytics.memlog import LogOnlyStorage, MemoryEventLog
from tests.analytics.test_export import exported
from zq.analytics.export import export, settled
from zq.storage.records import Event


class LateCommitLog(MemoryEventLog):
    """A log whose cursor 2 is written but not yet committed: readers skip it.

    Its cursors are given at write time (as on MariaDB), so its order is not final.
    """

    final_order = False

    def __init__(self) -> None:
        super().__init__(Event(cursor="", time=t, project="p", queue="q", kind="posted",
                               message_id=f"m{t}") for t in (100.0, 101.0, 102.0))
        self.uncommitted = {"2"}

    def read(self, *, after: str | None = None, limit: int = 1000) -> list[Event]:
        return [e for e in super().read(after=after, limit=limit)
                if e.cursor not in self.uncommitted]


def run_late_commit_scenario(tmp_path, settle: float) -> list[str]:
    log = LateCommitLog()
    # First run at t=131.5: event 1 has settled, event 3 (t=102) has not and
    # event 2 is still in its transaction.
    export({"a": LogOnlyStorage(log)}, str(tmp_path), settle=settle, now=lambda: 131.5)
    log.uncommitted.clear()  # the slow transaction commits
    export({"a": LogOnlyStorage(log)}, str(tmp_path), settle=settle, now=lambda: 500.0)
    return [cursor for _, cursor in exported(tmp_path)]


def test_a_late_committing_event_is_exported_on_the_next_run(tmp_path):
    assert run_late_commit_scenario(tmp_path, settle=30.0) == ["1", "2", "3"]


def test_without_a_settle_window_the_late_event_would_be_lost(tmp_path):
    # Shows what the window protects against: reading event 3 moves the
    # cursor past event 2 before it commits, and the trim then deletes it.
    assert run_late_commit_scenario(tmp_path, settle=0.0) == ["1", "3"]


def test_settled_keeps_only_the_leading_old_events():
    events = [Event(cursor=str(i), time=t, project="p", queue="q", kind="posted")
              for i, t in enumerate((10.0, 11.0, 30.0, 12.0))]
    assert [e.cursor for e in settled(events, settled_before=20.0)] == ["0", "1"]
    assert settled(events, settled_before=5.0) == []


def test_negative_settle_is_refused(tmp_path):
    with pytest.raises(ValueError, match="settle"):
        export({"a": LogOnlyStorage(MemoryEventLog())}, str(tmp_path), settle=-1)
