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
import random
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.crash.audit import duplicates, listed_messages, project_events, replay
from tests.e2e.server import ServerProcess, clean_environment
from zq import events, moves
from zq.storage import open_storage, scheme_of
from zq.storage.base import NewMessage

pytestmark = pytest.mark.slow
log = logging.getLogger(__name__)

MESSAGES = {"sqlite": 10000, "postgresql": 10000, "redis": 20000}
BATCH = 500
KILLS = 4
UP_SECONDS = (0.3, 1.2)  # how long each server works before its SIGKILL


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


def _left_in_dlq(uri: str, project: str) -> int:
    storage = open_storage(uri)
    try:
        return storage.queues.stats(project, "dlq").total
    finally:
        storage.close()


def _redriver(project: str, url: list[str], stop: threading.Event) -> None:
    """Redrive calls, one after the other, against whichever server is up."""
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    while not stop.is_set():
        try:
            httpx.post(f"{url[0]}/v2/queues/dlq/redrive", headers=headers,
                       json={"limit": 200}, timeout=30, trust_env=False)
        except httpx.HTTPError:
            time.sleep(0.05)  # killed meanwhile: the next server gets its own URL


def test_sigkill_during_a_redrive_loses_and_doubles_nothing(
    storage_uri: str, tmp_path: Path
) -> None:
    project = f"crash-redrive-{uuid.uuid4().hex}"
    if scheme_of(storage_uri) == "sqlite":
        from zq.storage.sql import migrate

        migrate.upgrade(storage_uri)
    total = MESSAGES[scheme_of(storage_uri)]
    posted = _dead_letters(storage_uri, project, total)
    env = clean_environment(tmp_path / "data")
    chance = random.Random()

    def start(generation: int) -> ServerProcess:
        return ServerProcess(tmp_path / f"server-{generation}.log", env,
                             "--workers", "2", "--storage", storage_uri).start()

    server = start(0)
    url, stop = [server.url], threading.Event()
    redriver = threading.Thread(target=_redriver, args=(project, url, stop), daemon=True)
    redriver.start()
    progress = []
    try:
        for generation in range(1, KILLS + 1):
            time.sleep(chance.uniform(*UP_SECONDS))
            server.kill()
            progress.append(total - _left_in_dlq(storage_uri, project))
            server = start(generation)
            url[0] = server.url
        deadline = time.monotonic() + 300
        while _left_in_dlq(storage_uri, project) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop.set()
        redriver.join(60)
    try:
        listed = listed_messages(server.url, project, ("src", "dlq"))
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
