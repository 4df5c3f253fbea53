"""Client threads that post, claim, delete, release and dead letter through HTTP.

Producers post batches to the source queues; consumers claim from every
queue (the dead letter queue included), delete some messages with their
claim id, and release most claims so the rest are claimed again until the
queue's ``_max_claim_count`` sends them to the dead letter queue. Every
answer the test relies on is written to a ``Ledger``: which ids a 201 post
acknowledged, which deletes a 204 confirmed, which claims a 201 granted.

A request that fails on the transport (the server was killed under it)
has an unknown outcome and records nothing; the client then waits for the
next server, whose address ``Target`` hands out.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass, field

import httpx

SOURCE_QUEUES = ("work-a", "work-b")
DEAD_LETTER_QUEUE = "work-dlq"
ALL_QUEUES = (*SOURCE_QUEUES, DEAD_LETTER_QUEUE)
MAX_CLAIM_COUNT = 2
CLAIM_TTL = 60  # the shortest valid claim ttl and grace
CLAIM_GRACE = 60
MESSAGE_TTL = 3600  # nothing expires during the run: a missing message is a lost one


class Target:
    """The address of the current server; None while it is down."""

    def __init__(self) -> None:
        self._url: str | None = None
        self._changed = threading.Condition()

    def set(self, url: str | None) -> None:
        with self._changed:
            self._url = url
            self._changed.notify_all()

    def get(self, timeout: float = 30.0) -> str | None:
        with self._changed:
            self._changed.wait_for(lambda: self._url is not None, timeout)
            return self._url


@dataclass
class Ledger:
    """What the server acknowledged to the clients; thread-safe."""

    acknowledged: set[str] = field(default_factory=set)  # ids from 201 posts
    deleted: set[str] = field(default_factory=set)  # ids of 204 deletes with a claim id
    claims: dict[str, float] = field(default_factory=dict)  # claim id -> time it was asked for
    requests: int = 0
    transport_errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answered(self, status: int) -> None:
        with self.lock:
            self.requests += 1
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def lost(self) -> None:
        with self.lock:
            self.requests += 1
            self.transport_errors += 1


def headers(project: str, client_id: str) -> dict[str, str]:
    return {"Client-ID": client_id, "X-Project-ID": project}


class Client(threading.Thread):
    """One producer or consumer: loops until ``stop`` is set."""

    def __init__(self, role: str, project: str, target: Target, ledger: Ledger,
                 stop: threading.Event, seed: int) -> None:
        super().__init__(name=f"crash-{role}-{seed}", daemon=True)
        self.role = role
        self.target = target
        self.ledger = ledger
        self.stop_event = stop
        self.random = random.Random(seed)
        self.headers = headers(project, str(uuid.uuid4()))
        self.http = httpx.Client(timeout=15.0, trust_env=False)
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                url = self.target.get()
                if url is None:
                    continue
                try:
                    self.produce(url) if self.role == "producer" else self.consume(url)
                except httpx.TransportError:
                    self.ledger.lost()
                    time.sleep(0.05)  # the server is gone; the next one has a new address
        except BaseException as error:  # reported by the test, not lost in a thread
            self.failure = error
        finally:
            self.http.close()

    def request(self, method: str, url: str, **kwargs) -> httpx.Response:
        response = self.http.request(method, url, headers=self.headers, **kwargs)
        self.ledger.answered(response.status_code)
        if response.status_code >= 500:
            raise AssertionError(f"{method} {url}: {response.status_code} {response.text}")
        return response

    def produce(self, url: str) -> None:
        queue = self.random.choice(SOURCE_QUEUES)
        count = self.random.randint(1, 5)
        messages = [{"body": {"n": self.random.random(), "pad": "x" * self.random.randint(0, 2000)},
                     "ttl": MESSAGE_TTL} for _ in range(count)]
        response = self.request("POST", f"{url}/v2/queues/{queue}/messages",
                                json={"messages": messages})
        assert response.status_code == 201, response.text
        ids = [href.rsplit("/", 1)[1] for href in response.json()["resources"]]
        assert len(ids) == count
        with self.ledger.lock:
            self.ledger.acknowledged.update(ids)

    def consume(self, url: str) -> None:
        queue = self.random.choice(ALL_QUEUES)
        asked = time.time()
        response = self.request(
            "POST", f"{url}/v2/queues/{queue}/claims", params={"limit": 5},
            json={"ttl": CLAIM_TTL, "grace": CLAIM_GRACE},
        )
        if response.status_code == 204:
            time.sleep(0.01)
            return
        assert response.status_code == 201, response.text
        claim_id = response.headers["Location"].rsplit("/", 1)[1]
        with self.ledger.lock:
            self.ledger.claims[claim_id] = asked
        for message in response.json()["messages"]:
            # Dead lettered messages are deleted more eagerly: they end somewhere.
            if self.random.random() < (0.6 if queue == DEAD_LETTER_QUEUE else 0.35):
                deleted = self.request("DELETE", f"{url}{message['href']}")
                assert deleted.status_code == 204, deleted.text
                with self.ledger.lock:
                    self.ledger.deleted.add(message["id"])
        if self.random.random() < 0.85:  # the rest stay held until the claim expires
            released = self.request("DELETE", f"{url}/v2/queues/{queue}/claims/{claim_id}")
            assert released.status_code == 204, released.text


def configure_queues(url: str, project: str) -> None:
    """Create the source queues with their dead letter policy."""
    policy = {"_max_claim_count": MAX_CLAIM_COUNT, "_dead_letter_queue": DEAD_LETTER_QUEUE}
    with httpx.Client(timeout=15.0, trust_env=False) as http:
        for queue in SOURCE_QUEUES:
            response = http.put(f"{url}/v2/queues/{queue}", json=policy,
                                headers=headers(project, str(uuid.uuid4())))
            assert response.status_code == 201, response.text
