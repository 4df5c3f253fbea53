"""Eight clients through a failover, and the audit of what they were told.

Producers post; consumers claim from every queue, then for each message
delete it (with its claim id), reject it for a retry (the queue's backoff
decides when it comes back), reject it for good (a dead letter move), or
leave it to the claim's release, so that claim counts reach
``_max_claim_count`` and messages move to the dead letter queue too.

Every answer the audit relies on goes to the ``Ledger``: ids a 201 post
acknowledged, deletes a 204 confirmed, terminal rejects a 204 confirmed.
A 503 (the backend failing over) or a transport error has an unknown
outcome and records nothing but its count; the client waits a moment and
goes on. Any other 5xx is counted as a failure, as is a request that took
longer than ``BOUND`` seconds (a hang).

``audit`` then compares what the clients were told with what the
promoted backend holds: what the server lists in each queue and what its
event log says happened to each message.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import httpx

from tests.crash.audit import duplicates, listed_messages, project_events, replay
from zq.storage import open_storage

SOURCE_QUEUES = ("work-a", "work-b")
DEAD_LETTER_QUEUE = "work-dlq"
ALL_QUEUES = (*SOURCE_QUEUES, DEAD_LETTER_QUEUE)
MAX_CLAIM_COUNT = 3
MESSAGE_TTL = 3600  # nothing expires during a run: a missing message is a lost one
CLAIM_TTL = 60
BACKOFF = {"_retry_delay": 1, "_retry_max_delay": 2, "_retry_backoff": "linear"}
SETTLE = BACKOFF["_retry_max_delay"] + 1.0  # seconds after the load until nothing is delayed
BOUND = 10.0  # seconds a request may take, failover or not; longer is a hang
HTTP_TIMEOUT = 30.0  # the client's own limit, past BOUND so that a hang is seen
PAUSE_AFTER_UNAVAILABLE = 0.1  # shorter than Retry-After: the test measures recovery


class Unavailable(Exception):
    """The server answered 503: try again later, nothing to record."""


@dataclass
class Ledger:
    """What the server told the clients; thread-safe."""

    acknowledged: set[str] = field(default_factory=set)  # ids of 201 posts
    deleted: set[str] = field(default_factory=set)  # ids of 204 deletes
    moved: dict[str, str] = field(default_factory=dict)  # id -> queue of a 204 terminal reject
    statuses: Counter = field(default_factory=Counter)
    transport_errors: int = 0
    unavailable_without_retry_after: int = 0
    hung: list[str] = field(default_factory=list)  # "METHOD path: seconds"
    posts_ok: list[float] = field(default_factory=list)  # time.monotonic() a 201 post was sent
    lock: threading.Lock = field(default_factory=threading.Lock)


def headers(project: str) -> dict[str, str]:
    return {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}


class Client(threading.Thread):
    """One producer or consumer, looping until ``stop`` is set."""

    def __init__(self, role: str, url: str, project: str, ledger: Ledger,
                 stop: threading.Event, seed: int) -> None:
        super().__init__(name=f"failover-{role}-{seed}", daemon=True)
        self.role = role
        self.url = url
        self.ledger = ledger
        self.stop_event = stop
        self.random = random.Random(seed)
        self.http = httpx.Client(base_url=url, headers=headers(project),
                                 timeout=HTTP_TIMEOUT, trust_env=False)
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                try:
                    self.produce() if self.role == "producer" else self.consume()
                except (Unavailable, httpx.TransportError):
                    time.sleep(PAUSE_AFTER_UNAVAILABLE)
        except BaseException as error:  # reported by the test, not lost in a thread
            self.failure = error
        finally:
            self.http.close()

    def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        started = time.monotonic()
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.TransportError:
            self._took(method, path, started)
            with self.ledger.lock:
                self.ledger.transport_errors += 1
            raise
        self._took(method, path, started)
        with self.ledger.lock:
            self.ledger.statuses[response.status_code] += 1
            if response.status_code == 503 and "Retry-After" not in response.headers:
                self.ledger.unavailable_without_retry_after += 1
        if response.status_code == 503:
            raise Unavailable(response.text)
        return response

    def _took(self, method: str, path: str, started: float) -> None:
        seconds = time.monotonic() - started
        if seconds > BOUND:
            with self.ledger.lock:
                self.ledger.hung.append(f"{method} {path}: {seconds:.1f} s")

    def produce(self) -> None:
        queue = self.random.choice(SOURCE_QUEUES)
        count = self.random.randint(1, 5)
        messages = [{"body": {"n": self.random.random()}, "ttl": MESSAGE_TTL}
                    for _ in range(count)]
        sent = time.monotonic()
        response = self.request("POST", f"/v2/queues/{queue}/messages",
                                json={"messages": messages})
        if response.status_code != 201:
            return  # counted in statuses; the audit reports anything but 201/503
        ids = [href.rsplit("/", 1)[1] for href in response.json()["resources"]]
        with self.ledger.lock:
            self.ledger.acknowledged.update(ids)
            self.ledger.posts_ok.append(sent)

    def consume(self) -> None:
        queue = self.random.choice(ALL_QUEUES)
        response = self.request("POST", f"/v2/queues/{queue}/claims", params={"limit": 5},
                                json={"ttl": CLAIM_TTL, "grace": 60})
        if response.status_code != 201:
            time.sleep(0.02)
            return
        claim_id = response.headers["Location"].rsplit("/", 1)[1]
        for message in response.json()["messages"]:
            roll = self.random.random()
            href = f"{message['href'].split('?', 1)[0]}"
            if roll < 0.35 or queue == DEAD_LETTER_QUEUE:
                done = self.request("DELETE", href, params={"claim_id": claim_id})
                if done.status_code == 204:
                    with self.ledger.lock:
                        self.ledger.deleted.add(message["id"])
            elif roll < 0.55:
                self.request("POST", f"{href}/reject", params={"claim_id": claim_id},
                             json={"description": "retry", "retry_after": None})
            elif roll < 0.65:
                done = self.request("POST", f"{href}/reject", params={"claim_id": claim_id},
                                    json={"description": "give up"})
                if done.status_code == 204:
                    with self.ledger.lock:
                        self.ledger.moved[message["id"]] = DEAD_LETTER_QUEUE
        self.request("DELETE", f"/v2/queues/{queue}/claims/{claim_id}")


def configure_queues(url: str, project: str) -> None:
    """The source queues, with a dead letter queue and backoff."""
    policy = {"_max_claim_count": MAX_CLAIM_COUNT, "_dead_letter_queue": DEAD_LETTER_QUEUE,
              **BACKOFF}
    with httpx.Client(base_url=url, headers=headers(project), timeout=HTTP_TIMEOUT,
                      trust_env=False) as http:
        for queue in (DEAD_LETTER_QUEUE, *SOURCE_QUEUES):
            body = policy if queue != DEAD_LETTER_QUEUE else {}
            response = http.put(f"/v2/queues/{queue}", json=body)
            assert response.status_code in (201, 204), response.text


@dataclass
class Report:
    """What a failover cost, counted from outside; see ``audit``."""

    backend: str
    replication: str
    requests: int
    unavailable: int  # 503 answers
    unavailable_without_retry_after: int
    server_errors: int  # 5xx other than 503
    transport_errors: int
    hung: list[str]
    acknowledged: int
    acknowledged_lost: int
    deleted: int
    deletes_undone: int
    moves_undone: int  # 204 terminal rejects whose message is back in its source queue
    in_two_queues: int
    in_neither: int  # alive by the event log, but in no queue (lost in the middle of a move)
    kill_to_promoted: float
    kill_to_first_post: float | None
    promoted_to_first_post: float | None

    def lines(self) -> list[str]:
        first = "never" if self.kill_to_first_post is None else f"{self.kill_to_first_post:.1f} s"
        return [
            f"{self.backend} ({self.replication}): {self.requests} requests, "
            f"{self.unavailable} answered 503 ({self.unavailable_without_retry_after} without "
            f"Retry-After), {self.server_errors} other 5xx, {self.transport_errors} transport "
            f"errors, {len(self.hung)} past {BOUND:g} s",
            f"  acknowledged posts lost: {self.acknowledged_lost} of {self.acknowledged}; "
            f"deletes undone: {self.deletes_undone} of {self.deleted}; "
            f"dead letter moves undone: {self.moves_undone}",
            f"  in two queues: {self.in_two_queues}; in neither (half-moved): {self.in_neither}",
            f"  kill -> promoted {self.kill_to_promoted:.1f} s; kill -> first acknowledged post "
            f"{first}",
        ]


def audit(url: str, uri: str, project: str, ledger: Ledger, *, backend: str, replication: str,
          killed: float, promoted: float) -> Report:
    """Compare what the clients were told with what the backend now holds.

    Call it once the backoff of the last retry reject has passed: a listing
    leaves out delayed messages.
    """
    listed = listed_messages(url, project, ALL_QUEUES)
    where = {m.id: m.queue for m in listed}
    storage = open_storage(uri)
    try:
        fates = replay(project_events(storage, project))
    finally:
        storage.close()
    gone = {i for i, fate in fates.items() if not fate.alive}
    lost = [i for i in ledger.acknowledged if i not in where and i not in gone]
    undone = [i for i in ledger.deleted if i in where]
    moves_undone = [i for i, queue in ledger.moved.items() if where.get(i, queue) != queue]
    in_neither = [i for i, fate in fates.items() if fate.alive and i not in where]
    after = [sent for sent in ledger.posts_ok if sent >= killed]
    first = min(after) - killed if after else None
    return Report(
        backend=backend, replication=replication,
        requests=sum(ledger.statuses.values()) + ledger.transport_errors,
        unavailable=ledger.statuses[503],
        unavailable_without_retry_after=ledger.unavailable_without_retry_after,
        server_errors=sum(n for status, n in ledger.statuses.items()
                          if status >= 500 and status != 503),
        transport_errors=ledger.transport_errors, hung=list(ledger.hung),
        acknowledged=len(ledger.acknowledged), acknowledged_lost=len(lost),
        deleted=len(ledger.deleted), deletes_undone=len(undone),
        moves_undone=len(moves_undone), in_two_queues=len(duplicates(listed)),
        in_neither=len(in_neither), kill_to_promoted=promoted - killed,
        kill_to_first_post=first,
        promoted_to_first_post=None if first is None else first - (promoted - killed),
    )
