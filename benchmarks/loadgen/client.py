"""The HTTP side: one aiohttp session, timed requests, Zaqar v2 headers.

aiohttp rather than httpx: against a minimal endpoint on this machine the
httpx generator saturated its own core first (see docs/benchmarks.md).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from benchmarks.loadgen.stats import Recorder


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    location: str
    document: Any


class Client:
    """Requests to one server for one project, each timed into a Recorder."""

    def __init__(self, url: str, project: str, connections: int,
                 headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.headers = {
            "Client-ID": str(uuid.uuid4()),
            "X-Project-ID": project,
            "Content-Type": "application/json",
            "Accept": "application/json",
            **(headers or {}),  # e.g. X-Roles: admin for /v2/health
        }
        connector = aiohttp.TCPConnector(limit=connections, force_close=False)
        self.session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=30),
            headers=self.headers, json_serialize=lambda o: orjson.dumps(o).decode(),
        )

    async def close(self) -> None:
        await self.session.close()

    async def request(self, method: str, path: str, *, body: Any = None,
                      params: dict[str, str] | None = None) -> Answer:
        """One request, untimed; raises on transport errors only."""
        data = None if body is None else orjson.dumps(body)
        async with self.session.request(method, self.url + path, data=data,
                                        params=params) as response:
            raw = await response.read()
            document = orjson.loads(raw) if raw else None
            return Answer(response.status, response.headers.get("Location", ""), document)

    async def timed(self, recorder: Recorder, method: str, path: str, *, body: Any = None,
                    params: dict[str, str] | None = None,
                    since: float | None = None) -> Answer | None:
        """One timed request; None (and an error counted) unless it answered 2xx.

        ``since`` is when the request was due (open-loop runs): latency counts
        from then, so a server that falls behind is not hidden by the queueing.
        """
        began = time.perf_counter() if since is None else since
        try:
            answer = await self.request(method, path, body=body, params=params)
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError):
            recorder.errors += 1
            return None
        if not 200 <= answer.status < 300:
            recorder.errors += 1
            return None
        recorder.latencies.append(time.perf_counter() - began)
        return answer
