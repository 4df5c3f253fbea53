"""SIGKILL ``zq serve`` while it dead letters expired messages, restart it, audit.

A queue with ``_dead_letter_expired`` holds many messages that have already
expired (posted through the storage with a clock an hour back). The server
moves them to the dead letter queue from its garbage collector (every
0.1 s) and from the claims a client thread keeps making on the queue; the
test SIGKILLs the whole server process group several times while that work
is under way and restarts it. At the end:

- at least one kill landed while part of the messages had moved and part
  had not (the test checks what it claims to check);
- every message is in the dead letter queue exactly once, none is left in
  the source, none is lost;
- the event log holds, for each message, its ``posted`` and exactly one
  ``dead_lettered`` event (reason ``expired``), and no ``expired`` event.
"""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import pytest

from tests.crash.audit import (
    Caller,
    crash_environment,
    duplicates,
    kill_while_moving,
    listed_messages,
    project_events,
    queue_counter,
    replay,
)
from tests.crash.workload import Target
from tests.e2e.server import ServerProcess, clean_environment
from zq import events
from zq.clock import ManualClock
from zq.storage import open_storage, scheme_of
from zq.storage.records import NewMessage

pytestmark = pytest.mark.slow
log = logging.getLogger(__name__)

# More than the servers move before their kills (each is killed soon after
# it is seen moving, see kill_while_moving): Redis moves several times faster.
MESSAGES = {"sqlite": 10000, "postgresql": 10000, "redis": 30000}
POST_BATCH = 500
KILLS = 4
METADATA = {"_dead_letter_queue": "dlq", "_dead_letter_expired": True,
            "_dead_letter_queue_messages_ttl": 7200}


def _post_expired(uri: str, project: str, count: int) -> list[str]:
    """``count`` messages in "src" that expired long ago (ttl 60, an hour back)."""
    storage = open_storage(uri, clock=ManualClock(time.time() - 3600))
    try:
        storage.queues.create(project, "src", dict(METADATA))
        posted: list[str] = []
        for start in range(0, count, POST_BATCH):
            bodies = [f'{{"n":{n}}}' for n in range(start, start + POST_BATCH)]
            posted += storage.messages.post(
                project, "src",
                [NewMessage(body=b, ttl=60, delay=0, fingerprint=events.fingerprint(b))
                 for b in bodies],
                client_id="poster")
        return posted
    finally:
        storage.close()


def test_sigkill_during_expiry_dead_lettering_loses_nothing(
    storage_uri: str, tmp_path: Path
) -> None:
    project = f"crash-expiry-{uuid.uuid4().hex}"
    if scheme_of(storage_uri) == "sqlite":
        from zq.storage.sql import migrate

        migrate.upgrade(storage_uri)
    total = MESSAGES[scheme_of(storage_uri)]
    posted = _post_expired(storage_uri, project, total)
    env = crash_environment(clean_environment(tmp_path / "data"), storage_uri)
    env["ZQ_GC_INTERVAL"] = "0.1"

    def start(generation: int) -> ServerProcess:
        return ServerProcess(tmp_path / f"server-{generation}.log", env,
                             "--workers", "2", "--storage", storage_uri).start()

    # Claims on the source move expired messages first, as the collector does.
    target = Target()
    claimer = Caller(target, project, "/v2/queues/src/claims", {"ttl": 60, "grace": 60},
                     timeout=5)
    claimer.start()
    try:
        with queue_counter(storage_uri, project, "dlq") as moved:
            server, progress = kill_while_moving(start, moved, total, KILLS, target)
            # The last server finishes the work.
            deadline = time.monotonic() + 120
            while moved() < total and time.monotonic() < deadline:
                time.sleep(0.2)
    finally:
        claimer.stop(30)
    try:
        listed = listed_messages(server.url, project, ("src", "dlq"))
    finally:
        status = server.stop()
    assert status == 0, server.log()

    assert any(0 < moved < total for moved in progress), (
        f"no kill landed mid-way: {progress}")
    assert duplicates(listed) == [], "a message is in two queues"
    assert [m.id for m in listed if m.queue == "src"] == []
    assert sorted(m.id for m in listed if m.queue == "dlq") == sorted(posted)

    storage = open_storage(storage_uri)
    try:
        log_events = project_events(storage, project)
    finally:
        storage.close()
    fates = replay(log_events)
    assert set(fates) == set(posted)
    assert all(f.alive and f.queue == "dlq" for f in fates.values())
    assert all(f.kinds == [events.POSTED, events.DEAD_LETTERED] for f in fates.values()), (
        [f.kinds for f in fates.values() if f.kinds != [events.POSTED, events.DEAD_LETTERED]][:5])
    assert {e.detail["reason"] for e in log_events if e.kind == events.DEAD_LETTERED} == {
        "expired"}
    figures = (f"expiry crash test on {scheme_of(storage_uri)}: {total} expired messages, "
               f"{KILLS} SIGKILLs with {progress} moved at each, every message moved once")
    print(figures)
    log.warning(figures)
