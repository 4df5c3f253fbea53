"""``zq events export`` never trims an event a live subscription has not been notified of."""

from __future__ import annotations

from pathlib import Path

from tests.notifications.helpers import attach, config, drain, notifier, receiver
from tests.notifications.test_delivery import post, sub_id
from zq.analytics.export import export
from zq.clock import ManualClock
from zq.storage.base import Storage


def remaining(storage: Storage, project: str) -> int:
    return sum(1 for e in storage.events.read(limit=100000) if e.project == project)


def test_export_trims_only_what_every_live_subscription_has_seen(
        storage: Storage, clock: ManualClock, project: str, tmp_path: Path) -> None:
    subs = attach(storage)
    subs.records.clear()
    with receiver() as hook:
        sub = subs.add(sub_id(), project, "kept", hook.url())
        post(storage, project, "kept", 1, 2)
        # Not started yet (no cursor): what came after it was made stays.
        export({"b": storage}, str(tmp_path / "one"), settle=0, now=lambda: clock.now() + 60)
        assert remaining(storage, project) == 2
        drain(notifier(storage, clock, config(hook.port)))
        assert len(hook.received) == 2
        [third] = post(storage, project, "kept", 3)  # not notified yet
        export({"b": storage}, str(tmp_path / "two"), settle=0, now=lambda: clock.now() + 60)
        assert [e.message_id for e in storage.events.read(limit=100000)
                if e.project == project] == [third]
        subs.records.remove(sub)  # the subscription is gone: nothing holds the log
        export({"b": storage}, str(tmp_path / "three"), settle=0,
               now=lambda: clock.now() + 60)
        assert remaining(storage, project) == 0


def mine(storage: Storage, project: str) -> list[object]:
    return [e.message_id for e in storage.events.read(limit=100000) if e.project == project]


def test_a_stuck_subscription_holds_the_log_for_at_most_the_hold(
        storage: Storage, clock: ManualClock, project: str, tmp_path: Path) -> None:
    subs = attach(storage)
    subs.records.clear()
    with receiver() as hook:
        subs.add(sub_id(), project, "stuck", hook.url())
        post(storage, project, "stuck", 1)
        drain(notifier(storage, clock, config(hook.port)))  # it has a cursor past "1"
        old = post(storage, project, "stuck", 2, 3)  # then its subscriber stops answering
        clock.advance(100)
        young = post(storage, project, "stuck", 4)
        said: list[str] = []
        export({"b": storage}, str(tmp_path / "d"), settle=0, now=clock.now,
               progress=said.append)
        assert mine(storage, project) == old + young  # within a day: all kept
        export({"b": storage}, str(tmp_path / "d"), settle=0, now=clock.now,
               progress=said.append, subscription_hold=50)
        assert mine(storage, project) == young  # older than the hold: trimmed, and said
        assert [m for m in said if "behind" in m] == [
            f"subscription {subs.records[0].id} of {project}/stuck is more than 50 s behind: "
            "2 events it was not notified of are trimmed"]


def test_a_subscription_not_started_on_holds_only_what_came_after_it(
        storage: Storage, clock: ManualClock, project: str, tmp_path: Path) -> None:
    subs = attach(storage)
    subs.records.clear()
    before = post(storage, project, "starved", "before")
    clock.advance(10)
    starved = subs.add(sub_id(), project, "starved", "http://127.0.0.1:9/never")
    starved.expires = clock.now() + starved.ttl  # made now, and never given a cursor
    clock.advance(1)
    after = post(storage, project, "starved", "after")
    export({"b": storage}, str(tmp_path / "d"), settle=0, now=clock.now)
    assert mine(storage, project) == after  # "before" is trimmed: not its business
    assert before[0] not in mine(storage, project)
