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
        # Not started yet (no cursor): the whole log stays.
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
