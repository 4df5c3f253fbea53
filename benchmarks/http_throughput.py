"""HTTP throughput of a running zq server: messages and requests per second.

Two workloads, each bounded by a number of requests and a time limit:

- ``post``: POST batches of ``--batch`` messages with ``--body-size``-byte
  bodies to one queue;
- ``claim-delete``: from a backlog prefilled before timing starts, claim
  ``--batch`` messages, then delete them with
  ``DELETE .../messages?ids=...&claim_ids=...``.

Each workload prints one JSON line: msgs_per_s, req_per_s, p50_ms, p99_ms,
errors (non-2xx answers and transport failures) and the run's parameters.
Only loopback addresses are accepted: this measures a local server.

    zq serve --port 8888 &
    python benchmarks/http_throughput.py --url http://127.0.0.1:8888
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
WORKLOADS = ("post", "claim-delete")


@dataclass
class Settings:
    url: str
    concurrency: int = 8
    requests: int = 2000  # per workload; claim-delete counts claims and deletes
    duration: float = 20.0  # seconds per workload, whichever bound comes first
    batch: int = 10
    body_size: int = 1024
    project: str = field(default_factory=lambda: f"bench-{uuid.uuid4().hex[:12]}")


@dataclass
class Recorder:
    """Latencies, errors and messages of one workload run."""

    settings: Settings
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    messages: int = 0
    reserved: int = 0  # requests started (or about to start)
    started: float = field(default_factory=time.perf_counter)

    def reserve(self, requests: int = 1) -> bool:
        """Take ``requests`` from the budget; False when the request or time bound is hit."""
        if (self.reserved + requests > self.settings.requests
                or time.perf_counter() - self.started >= self.settings.duration):
            return False
        self.reserved += requests
        return True

    async def call(self, request: Awaitable[httpx.Response]) -> httpx.Response | None:
        """Time one request; None (and an error counted) unless it answered 2xx."""
        began = time.perf_counter()
        try:
            response = await request
        except httpx.HTTPError:
            self.errors += 1
            return None
        if not response.is_success:
            self.errors += 1
            return None
        self.latencies.append(time.perf_counter() - began)
        return response

    def summary(self, workload: str) -> dict[str, object]:
        elapsed = time.perf_counter() - self.started
        ordered = sorted(self.latencies)
        return {
            "workload": workload,
            "msgs_per_s": round(self.messages / elapsed, 1),
            "req_per_s": round((len(ordered) + self.errors) / elapsed, 1),
            "p50_ms": round(percentile(ordered, 50) * 1000, 2),
            "p99_ms": round(percentile(ordered, 99) * 1000, 2),
            "errors": self.errors,
            "requests": len(ordered) + self.errors,
            "messages": self.messages,
            "seconds": round(elapsed, 2),
            "concurrency": self.settings.concurrency,
            "batch": self.settings.batch,
            "body_size": self.settings.body_size,
        }


def percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile of sorted values (0.0 for none)."""
    if not ordered:
        return 0.0
    rank = max(1, -(-len(ordered) * pct // 100))  # ceil without floats
    return ordered[int(rank) - 1]


def batch_body(settings: Settings) -> dict[str, object]:
    """A post of ``batch`` messages whose JSON bodies are ``body_size`` bytes."""
    filler = "x" * max(0, settings.body_size - len('{"data": ""}'))
    return {"messages": [{"ttl": 3600, "body": {"data": filler}}] * settings.batch}


def new_client(settings: Settings) -> httpx.AsyncClient:
    headers = {"Client-ID": str(uuid.uuid4()), "X-Project-ID": settings.project}
    limits = httpx.Limits(max_connections=settings.concurrency,
                          max_keepalive_connections=settings.concurrency)
    return httpx.AsyncClient(base_url=settings.url, headers=headers, limits=limits,
                             timeout=30.0, trust_env=False)


async def run_workers(settings: Settings, worker: Callable[[], Awaitable[None]]) -> None:
    await asyncio.gather(*(worker() for _ in range(settings.concurrency)))


async def post_workload(client: httpx.AsyncClient, settings: Settings) -> dict[str, object]:
    """POST batches to one queue until a bound is reached."""
    queue = f"/v2/queues/post-{uuid.uuid4().hex[:8]}"
    body = batch_body(settings)
    recorder = Recorder(settings)

    async def worker() -> None:
        while recorder.reserve():
            if await recorder.call(client.post(f"{queue}/messages", json=body)):
                recorder.messages += settings.batch

    await run_workers(settings, worker)
    summary = recorder.summary("post")
    await client.delete(queue)
    return summary


async def prefill(client: httpx.AsyncClient, queue: str, settings: Settings) -> None:
    """Post enough messages for every claim the run may make (not timed)."""
    posts = settings.requests // 2 + settings.concurrency
    body = batch_body(settings)
    pending = iter(range(posts))

    async def worker() -> None:
        for _ in pending:
            response = await client.post(f"{queue}/messages", json=body)
            response.raise_for_status()

    await run_workers(settings, worker)


async def claim_delete_workload(
    client: httpx.AsyncClient, settings: Settings
) -> dict[str, object]:
    """Claim a batch, delete it with its claim id; repeat until a bound or empty."""
    queue = f"/v2/queues/claim-{uuid.uuid4().hex[:8]}"
    await prefill(client, queue, settings)
    recorder = Recorder(settings)

    async def worker() -> None:
        while recorder.reserve(2):  # a claim and its delete
            claimed = await recorder.call(client.post(
                f"{queue}/claims", params={"limit": settings.batch},
                json={"ttl": 300, "grace": 60}))
            if claimed is None:
                continue
            if claimed.status_code == 204:
                return  # the backlog is used up
            messages = claimed.json()["messages"]
            ids = [message["id"] for message in messages]
            claim_id = claimed.headers["Location"].rstrip("/").rsplit("/", 1)[1]
            deleted = await recorder.call(client.delete(
                f"{queue}/messages", params={"ids": ",".join(ids), "claim_ids": claim_id}))
            if deleted is not None:
                recorder.messages += len(ids)

    await run_workers(settings, worker)
    summary = recorder.summary("claim-delete")
    await client.delete(queue)
    return summary


async def run(settings: Settings, workloads: list[str]) -> list[dict[str, object]]:
    runners = {"post": post_workload, "claim-delete": claim_delete_workload}
    results = []
    async with new_client(settings) as client:
        (await client.get("/v2/ping")).raise_for_status()
        for name in workloads:
            result = await runners[name](client, settings)
            print(json.dumps(result), flush=True)
            results.append(result)
    return results


def parse_args(argv: list[str] | None = None) -> tuple[Settings, list[str]]:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: python benchmarks/http_throughput.py --url http://127.0.0.1:8888 "
               "--workload post --concurrency 8 --requests 2000",
    )
    parser.add_argument("--url", default="http://127.0.0.1:8888",
                        help="zq server on a loopback address (default: %(default)s)")
    parser.add_argument("--workload", choices=[*WORKLOADS, "all"], default="all")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="requests in flight at once (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=2000,
                        help="at most this many requests per workload (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=20.0,
                        help="at most this many seconds per workload (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=10,
                        help="messages per post and per claim (default: %(default)s)")
    parser.add_argument("--body-size", type=int, default=1024,
                        help="bytes of each message body as JSON (default: %(default)s)")
    args = parser.parse_args(argv)
    host = urlsplit(args.url).hostname
    if host not in LOOPBACK:
        parser.error(f"--url must point at a loopback address ({sorted(LOOPBACK)}), not {host}")
    if min(args.concurrency, args.requests, args.batch) < 1 or args.duration <= 0:
        parser.error("--concurrency, --requests, --batch and --duration must be positive")
    settings = Settings(url=args.url.rstrip("/"), concurrency=args.concurrency,
                        requests=args.requests, duration=args.duration,
                        batch=args.batch, body_size=args.body_size)
    workloads = list(WORKLOADS) if args.workload == "all" else [args.workload]
    return settings, workloads


def main(argv: list[str] | None = None) -> int:
    settings, workloads = parse_args(argv)
    try:
        asyncio.run(run(settings, workloads))
    except httpx.HTTPError as exc:
        print(f"http_throughput: {settings.url}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
