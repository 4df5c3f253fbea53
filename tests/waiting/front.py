"""zq's app behind zq.buffered_wsgi with its waiting claims, driven in one event loop.

Requests go through ``BufferedWSGI.__rsgi__`` as granian would send them,
so a waiting claim waits in this loop exactly as in a worker; a client's
disconnect is an event the test sets. The re-check runs every
``RECHECK`` seconds of real time, over the test's ManualClock.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlencode

from zq.api import create_app
from zq.buffered_wsgi import BufferedWSGI
from zq.clock import ManualClock
from zq.config import Config
from zq.storage.base import Storage
from zq.waiting import WaitingClaims
from zq.waiting.recheck import Recheck

RECHECK = 0.05  # seconds of real time between re-checks


class Headers:
    def __init__(self, pairs: dict[str, str]) -> None:
        self.pairs = {k.lower(): v for k, v in pairs.items()}

    def get(self, name: str, default: Any = None) -> Any:
        return self.pairs.get(name, default)

    def __contains__(self, name: str) -> bool:
        return name in self.pairs

    def items(self) -> list[tuple[str, str]]:
        return list(self.pairs.items())


class Client:
    """One request's connection: its body, its answer, and whether it left."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.answer: tuple[int, dict[str, str], Any] | None = None
        self.left = asyncio.Event()

    async def __call__(self) -> bytes:
        return self.body

    async def client_disconnect(self) -> None:
        await self.left.wait()

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.answer = (status, {k.lower(): v for k, v in headers},
                       json.loads(body) if body else None)


class Front:
    """The served app; ``request`` sends one request and returns its answer."""

    def __init__(self, storage: Storage, clock: ManualClock, project: str, *,
                 capacity: int = 100, config: Config | None = None) -> None:
        config = config or Config().with_overrides(metrics={"enabled": False})
        self.project = project
        self.storage = storage
        self.recheck = Recheck(storage_for=lambda p, q: storage, storages=lambda: [storage],
                               interval=RECHECK, clock=clock)
        self.waiting = WaitingClaims(capacity=capacity, recheck=self.recheck)
        self.app = create_app(config, storage=storage, clock=clock,
                              on_claimable=self.waiting.wake_threadsafe)
        self.rsgi = BufferedWSGI(self.app, threads=4, body_timeout=5.0, max_body=1 << 20,
                                 waiting=self.waiting)
        self.client_id = str(uuid.uuid4())

    def close(self) -> None:
        self.waiting.close()
        self.rsgi.close()

    async def request(self, method: str, path: str, body: Any = None,
                      client: Client | None = None, query: str | None = None,
                      **params: Any) -> tuple[int, dict, Any]:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode() if body else b""
        client = client or Client(raw)
        client.body = raw
        headers = {"Client-ID": self.client_id, "X-Project-ID": self.project,
                   "Content-Type": "application/json", "Content-Length": str(len(raw))}
        scope = SimpleNamespace(proto="http", http_version="1.1", server="127.0.0.1:8888",
                                client="127.0.0.2:50000", scheme="http", method=method,
                                path=path,
                                query_string=urlencode(params) if query is None else query,
                                headers=Headers(headers))
        await self.rsgi.__rsgi__(scope, client)
        assert client.answer is not None
        return client.answer

    async def post(self, queue: str, *bodies: Any, delay: int = 0) -> list[str]:
        status, _, answer = await self.request(
            "POST", f"/v2/queues/{queue}/messages",
            {"messages": [{"body": b, "ttl": 3600, "delay": delay} for b in bodies]})
        assert status == 201, answer
        return [href.rsplit("/", 1)[1] for href in answer["resources"]]

    async def claim(self, queue: str, client: Client | None = None, **params: Any
                    ) -> tuple[int, dict, Any]:
        return await self.request("POST", f"/v2/queues/{queue}/claims", {"ttl": 60},
                                  client, **params)

    async def stats(self, queue: str) -> dict[str, int]:
        _, _, answer = await self.request("GET", f"/v2/queues/{queue}/stats")
        return answer["messages"]

    async def waiters(self, count: int, queue: str | None = None) -> None:
        """Until ``count`` requests wait (on ``queue``); a few seconds at most."""
        for _ in range(500):
            waiting = (self.waiting.count if queue is None
                       else self.waiting.waiting().get((self.project, queue), 0))
            if waiting == count:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"{count} waiting claims expected, {self.waiting.waiting()}")


def bodies(answer: Any) -> list[Any]:
    return [message["body"] for message in answer["messages"]]
