"""The checks of the crash tests: what is stored against what was promised.

``replay`` rebuilds each message's fate from the event log alone;
``listed_messages`` reads what the server now shows in every queue. The
test compares both with each other and with the clients' ``Ledger``.

The expiry and redrive crash tests also share how they drive a long move:
``queue_counter`` watches a queue fill or empty, ``Caller`` keeps calling
one endpoint of whichever server is up, and ``kill_while_moving`` SIGKILLs
each server just after it was seen moving messages.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.crash.workload import Target
from tests.e2e.server import ServerProcess
from zq import events
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.records import Event

# Servers started with ``crash_environment`` list this many messages per
# page (ZQ_LIMITS_MAX_MESSAGES_PER_PAGE): the audit reads tens of thousands
# of messages, and Zaqar's 20 a page made that most of a test's time. Not
# for the redrive test: a redrive call reads pages ten times that size.
LISTING_PAGE = 1000
ZAQAR_PAGE = 20


@dataclass
class Fate:
    """A message's state according to its events."""

    queue: str
    claim_count: int = 0
    alive: bool = True
    kinds: list[str] = field(default_factory=list)


def project_events(storage: Storage, project: str) -> list[Event]:
    """Every event of ``project``, in the order the changes happened."""
    found: list[Event] = []
    cursor: str | None = None
    while True:
        page = storage.events.read(after=cursor, limit=1000)
        if not page:
            postgresql = bool(found) and ":" in found[0].cursor
            return sorted(found, key=insertion_order) if postgresql else found
        found.extend(event for event in page if event.project == project)
        cursor = page[-1].cursor


def insertion_order(event: Event) -> int:
    """The seq of a PostgreSQL cursor ``"<xid>:<seq>"``.

    PostgreSQL's log is read in (xid, seq) order, so that an export never
    skips a late commit; but an xid is taken when a transaction first
    writes, not when it commits, so two claims of one message can come back
    in the other order. The seq is drawn when the event is inserted, after
    the message's row lock, so it orders the changes of one message as they
    happened.
    """
    return int(event.cursor.partition(":")[2])


def replay(log: list[Event]) -> dict[str, Fate]:
    """Each message's fate, by id; raises AssertionError on an impossible sequence."""
    fates: dict[str, Fate] = {}
    for event in log:
        if event.message_id is None:  # claim-level expiry: no message changes
            continue
        if event.kind == events.POSTED:
            assert event.message_id not in fates, f"{event.message_id} posted twice"
            fates[event.message_id] = Fate(queue=event.queue)
            fates[event.message_id].kinds.append(event.kind)
            continue
        fate = fates.get(event.message_id)
        assert fate is not None, f"{event.kind} before posted: {event}"
        assert fate.alive, f"{event.kind} after the end of {event.message_id}: {fate.kinds}"
        assert event.queue == fate.queue, f"{event} is not in {fate.queue} ({fate.kinds})"
        fate.kinds.append(event.kind)
        if event.kind == events.CLAIMED:
            assert event.claim_count == fate.claim_count + 1, (event, fate)
            fate.claim_count += 1
        elif event.kind == events.DEAD_LETTERED:
            fate.queue = event.detail["to"]
        elif event.kind == events.REDRIVEN:  # claims start over in the destination
            fate.queue = event.detail["to"]
            fate.claim_count = 0
        elif event.kind in (events.DELETED, events.EXPIRED, events.PURGED):
            fate.alive = False
    return fates


@dataclass(frozen=True)
class Listed:
    id: str
    queue: str
    claim_count: int


def crash_environment(env: dict[str, str], storage_uri: str = "") -> dict[str, str]:
    """``env`` for a crash test's servers: pages of ``LISTING_PAGE`` messages.

    ZQ_TEST_GROUP_COMMIT=1 (as for the in-process suites, tests/backends.py)
    runs the servers with the SQL driver's group commit on, and
    ZQ_TEST_REDIS_COALESCE=1 those on a Redis ``storage_uri`` with coalesced
    script calls (``server_environment``).
    """
    return server_environment({**env, "ZQ_LIMITS_MAX_MESSAGES_PER_PAGE": str(LISTING_PAGE)},
                              storage_uri)


def server_environment(env: dict[str, str], storage_uri: str) -> dict[str, str]:
    """``env`` with the drivers' settings the ZQ_TEST_* switches ask for."""
    env = dict(env)
    if os.environ.get("ZQ_TEST_GROUP_COMMIT", "") == "1":
        env["ZQ_SQL_GROUP_COMMIT"] = "true"
    # Refused on any other storage (zq.server.prepare_storage) and on a cluster.
    if (os.environ.get("ZQ_TEST_REDIS_COALESCE", "") == "1"
            and storage_uri.startswith(("redis://", "rediss://", "redis+sentinel://"))):
        env["ZQ_REDIS_COALESCE"] = "true"
    return env


def listed_messages(url: str, project: str, queues: tuple[str, ...],
                    page_size: int = LISTING_PAGE) -> list[Listed]:
    """Every alive message of every queue, claimed ones and our own included.

    ``page_size`` above Zaqar's 20 needs a server started with ``crash_environment``.
    """
    found: list[Listed] = []
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    with httpx.Client(base_url=url, headers=headers, timeout=30.0, trust_env=False) as http:
        for queue in queues:
            href = (f"/v2/queues/{queue}/messages?include_claimed=true&echo=true"
                    f"&limit={page_size}")
            while href:
                response = http.get(href)
                assert response.status_code == 200, response.text
                page = response.json()
                found.extend(Listed(m["id"], queue, m["claim_count"]) for m in page["messages"])
                links = page.get("links") or []
                href = links[0]["href"] if page["messages"] and links else ""
    return found


def duplicates(listed: list[Listed]) -> list[str]:
    """Ids listed more than once (in two queues, or twice in one)."""
    return [i for i, n in Counter(m.id for m in listed).items() if n > 1]


@contextmanager
def queue_counter(uri: str, project: str, queue: str) -> Iterator[Callable[[], int]]:
    """A function counting the messages of ``queue`` in the storage, while open."""
    storage = open_storage(uri)
    try:
        yield lambda: storage.queues.stats(project, queue).total
    finally:
        storage.close()


class Caller(threading.Thread):
    """POSTs one body to one path of whichever server is up, again and again, until stopped."""

    def __init__(self, target: Target, project: str, path: str, body: dict[str, Any],
                 timeout: float) -> None:
        super().__init__(name=f"crash-caller-{path}", daemon=True)
        self.target = target
        self.path = path
        self.body = body
        self.timeout = timeout
        self.headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            url = self.target.get(timeout=1.0)
            if url is None:
                continue
            try:
                httpx.post(f"{url}{self.path}", headers=self.headers, json=self.body,
                           timeout=self.timeout, trust_env=False)
            except httpx.HTTPError:
                time.sleep(0.05)  # killed meanwhile: the next server has its own URL

    def stop(self, timeout: float) -> None:
        self.stop_event.set()
        self.join(timeout)


def kill_while_moving(start: Callable[[int], ServerProcess], moved: Callable[[], int],
                      total: int, kills: int, target: Target
                      ) -> tuple[ServerProcess, list[int]]:
    """Start a server, SIGKILL it soon after it moved messages, ``kills`` times.

    Waiting to see a server move (rather than a fixed time) puts every kill
    in the middle of the work however fast the machine is, so the tests need
    only a few thousand messages. A random pause of up to 0.1 s after the
    move was seen lands the kill at different points of the next batch.
    Returns the last server (not killed) and how many messages had moved at
    each kill.
    """
    chance = random.Random()
    server = start(0)
    target.set(server.url)
    progress: list[int] = []
    try:
        for generation in range(1, kills + 1):
            seen = moved()
            deadline = time.monotonic() + 60
            while moved() == seen < total and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(chance.uniform(0, 0.1))
            server.kill()
            target.set(None)
            progress.append(moved())
            server = start(generation)
            target.set(server.url)
    except BaseException:
        server.kill()  # no server outlives a failed test
        raise
    return server, progress
