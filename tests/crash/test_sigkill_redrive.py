"""SIGKILL ``zq serve`` during a large redrive, restart it, audit.

A dead letter queue holds many messages rejected from "src" (moved through
the storage). A client thread keeps calling ``POST /v2/queues/dlq/redrive``
(200 per call) against whichever server is up; the test SIGKILLs the whole
server process group several times while the redrive is under way and
restarts it. At the end:

- at least one kill landed while part of the messages had moved back and
  part had not (the test checks what it claims to check);
- every message is back in "src" exactly once, none is left in the dead
  letter queue, none is lost, none is in two queues;
- the event log holds, for each message, exactly ``posted``,
  ``dead_lettered``, ``redriven``: no move was recorded twice or lost.
"""

from __future__ import annotations

import logging
import time
import uuid
from pathlib import Path

import pytest

from tests.crash.audit import (
    ZAQAR_PAGE,
    Caller,
    duplicates,
    kill_while_moving,
    listed_messages,
    project_events,
    queue_counter,
    replay,
    server_environment,
)
from tests.crash.workload import Target
from tests.e2e.server import ServerProcess, clean_environment
from zq import events
from zq.poison import moves
from zq.storage import open_storage, scheme_of
from zq.storage.records import NewMessage

pytestmark = pytest.mark.slow
log = logging.getLogger(__name__)

# More than the servers redrive before their kills (each is killed soon
# after it is seen moving, see kill_while_moving): 200 a call, Redis faster.
MESSAGES = {"sqlite": 3000, "postgresql": 3000, "redis": 6000}
BATCH = 500
KILLS = 4


def _dead_letters(uri: str, project: str, count: int) -> list[str]:
    """``count`` messages posted to "src" and rejected into "dlq"."""
    storage = open_storage(uri)
    try:
        storage.queues.create(project, "src", {"_dead_letter_queue": "dlq"})
        posted: list[str] = []
        for start in range(0, count, BATCH):
            bodies = [f'{{"n":{n}}}' for n in range(start, start + BATCH)]
            ids = storage.messages.post(
                project, "src",
                [NewMessage(body=b, ttl=3600, delay=0, fingerprint=events.fingerprint(b))
                 for b in bodies],
                client_id="poster")
            moved = storage.messages.move(project, "src", ids,
                                          moves.rejected("dlq", None, "boom"), client_id=None)
            assert moved == ids
            posted += ids
        return posted
    finally:
        storage.close()


def test_sigkill_during_a_redrive_loses_and_doubles_nothing(
    storage_uri: str, tmp_path: Path
) -> None:
    project = f"crash-redrive-{uuid.uuid4().hex}"
    if scheme_of(storage_uri) == "sqlite":
        from zq.storage.sql import migrate

        migrate.upgrade(storage_uri)
    total = MESSAGES[scheme_of(storage_uri)]
    posted = _dead_letters(storage_uri, project, total)
    # Zaqar's pages: they size a redrive's reads.
    env = server_environment(clean_environment(tmp_path / "data"), storage_uri)

    def start(generation: int) -> ServerProcess:
        return ServerProcess(tmp_path / f"server-{generation}.log", env,
                             "--workers", "2", "--storage", storage_uri).start()

    target = Target()
    redriver = Caller(target, project, "/v2/queues/dlq/redrive", {"limit": 200}, timeout=30)
    redriver.start()
    try:
        with queue_counter(storage_uri, project, "dlq") as left:
            def moved() -> int:
                return total - left()

            server, progress = kill_while_moving(start, moved, total, KILLS, target)
            deadline = time.monotonic() + 300
            while left() and time.monotonic() < deadline:
                time.sleep(0.2)
    finally:
        redriver.stop(60)
    try:
        listed = listed_messages(server.url, project, ("src", "dlq"), page_size=ZAQAR_PAGE)
    finally:
        status = server.stop()
    assert status == 0, server.log()

    assert any(0 < moved < total for moved in progress), (
        f"no kill landed mid-way: {progress}")
    assert duplicates(listed) == [], "a message is in two queues"
    assert [m.id for m in listed if m.queue == "dlq"] == []
    assert sorted(m.id for m in listed if m.queue == "src") == sorted(posted)
    assert {m.claim_count for m in listed} == {0}

    storage = open_storage(storage_uri)
    try:
        log_events = project_events(storage, project)
    finally:
        storage.close()
    fates = replay(log_events)
    assert set(fates) == set(posted)
    assert all(f.alive and f.queue == "src" for f in fates.values())
    expected = [events.POSTED, events.DEAD_LETTERED, events.REDRIVEN]
    assert all(f.kinds == expected for f in fates.values()), (
        [f.kinds for f in fates.values() if f.kinds != expected][:5])
    figures = (f"redrive crash test on {scheme_of(storage_uri)}: {total} dead letters, "
               f"{KILLS} SIGKILLs with {progress} redriven at each, every message moved once")
    print(figures)
    log.warning(figures)
