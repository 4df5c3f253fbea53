"""The final checks of the crash test: what is stored against what was promised.

``replay`` rebuilds each message's fate from the event log alone;
``listed_messages`` reads what the server now shows in every queue. The
test compares both with each other and with the clients' ``Ledger``.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field

import httpx

from zq import events
from zq.storage.base import Event, Storage


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


def listed_messages(url: str, project: str, queues: tuple[str, ...]) -> list[Listed]:
    """Every alive message of every queue, claimed ones and our own included."""
    found: list[Listed] = []
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}
    with httpx.Client(base_url=url, headers=headers, timeout=30.0, trust_env=False) as http:
        for queue in queues:
            href = f"/v2/queues/{queue}/messages?include_claimed=true&echo=true&limit=20"
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
