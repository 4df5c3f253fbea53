"""The workloads: each one prepares, runs within its bounds and summarises.

- ``ping``: GET /v2/ping; against a minimal endpoint it shows the
  generator's own ceiling.
- ``post``: POST batches of ``batch`` messages of ``body_size`` bytes.
- ``claim-delete``: from a backlog posted before timing starts, claim
  ``batch`` messages, then DELETE them with ``?ids=...&claim_ids=...``.
- ``cycle``: producers (half the concurrency) post while consumers claim
  and delete; also reports the end-to-end latency from post to claim.
- ``poison``: as ``cycle``, on a queue with ``_max_claim_count`` 3 and a
  dead letter queue; 10% of the messages are never deleted (their claims
  are released, as a failing consumer would), so they move to the dead
  letter queue after three claims. Reports the good-message rate and the
  dead letter moves per second.

``msgs_per_s`` counts messages posted (``post``) or claimed and deleted
(the others; only good ones for ``poison``).
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.loadgen.client import Answer, Client
from benchmarks.loadgen.stats import Recorder

POISON_EVERY = 10  # one message in ten is poison
MAX_CLAIM_COUNT = 3
PREFILL_BATCH = 20  # messages per post while preparing a backlog (untimed)
CLAIM_TTL = {"ttl": 300, "grace": 60}

# One operation: called with the time it was due (open loop) or None; False
# ends the run (its requests are taken from the budget before it is called).
Operation = Callable[[float | None], Awaitable[bool]]


@dataclass
class Settings:
    url: str
    concurrency: int = 8
    requests: int = 3000  # per workload
    duration: float = 15.0  # seconds per workload, whichever bound comes first
    batch: int = 10
    body_size: int = 1024
    rate: float = 0.0  # operations per second (open loop); 0: closed loop
    max_in_flight: int = 256  # open loop: operations outstanding at most
    wait: float = 0.0  # seconds every claim asks the server to wait (zq's long poll); 0: none
    project: str = field(default_factory=lambda: f"bench-{uuid.uuid4().hex[:12]}")

    def recorder(self) -> Recorder:
        return Recorder(max_requests=self.requests, duration=self.duration)


def message_bodies(settings: Settings, count: int, *, first: int = 0,
                   poison: bool = False) -> list[dict[str, Any]]:
    """``count`` messages of ``body_size`` JSON bytes, stamped with the send time."""
    filler = "x" * max(0, settings.body_size - len('{"data":"","t":0000000000.000000,"p":0}'))
    now = time.time()
    return [{"ttl": 3600, "body": {
        "data": filler, "t": now,
        "p": int(poison and (first + i) % POISON_EVERY == 0)}} for i in range(count)]


def claim_id_of(answer: Answer) -> str:
    return answer.location.rstrip("/").rsplit("/", 1)[1].split("?")[0]


async def drive(settings: Settings, recorder: Recorder, operation: Operation,
                workers: int | None = None, cost: int = 1) -> None:
    """Run ``operation`` (``cost`` requests at most) until the bounds.

    Closed loop (``workers`` at once), or open loop at ``settings.rate``.
    """
    if settings.rate <= 0:
        async def worker() -> None:
            while recorder.reserve(cost):
                if not await operation(None):
                    return
        await asyncio.gather(*(worker() for _ in range(workers or settings.concurrency)))
        return
    interval = 1.0 / settings.rate
    slots = asyncio.Semaphore(settings.max_in_flight)
    tasks: set[asyncio.Task[None]] = set()
    start = time.perf_counter()

    async def one(due: float) -> None:
        try:
            await operation(due)
        finally:
            slots.release()

    for n in itertools.count():
        due = start + n * interval
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if not recorder.reserve(cost):
            break
        await slots.acquire()  # a server that falls behind: latency counts from ``due``
        task = asyncio.create_task(one(due))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await asyncio.gather(*tasks)


async def post_batches(client: Client, queue: str, settings: Settings, messages: int) -> None:
    """Post ``messages`` messages (untimed preparation), ``concurrency`` posts at once."""
    posts = iter(range(0, messages, PREFILL_BATCH))

    async def worker() -> None:
        for start in posts:
            body = {"messages": message_bodies(settings, min(PREFILL_BATCH, messages - start))}
            answer = await client.request("POST", f"{queue}/messages", body=body)
            if answer.status != 201:
                raise RuntimeError(f"prefill post answered {answer.status}: {answer.document}")

    await asyncio.gather(*(worker() for _ in range(settings.concurrency)))


async def claim(client: Client, recorder: Recorder, queue: str, settings: Settings,
                due: float | None) -> Answer | None:
    params = {"limit": str(settings.batch)}
    if settings.wait > 0:
        params["wait"] = f"{settings.wait:g}"
    return await client.timed(recorder, "POST", f"{queue}/claims", body=CLAIM_TTL,
                              params=params, since=due)


async def delete_claimed(client: Client, recorder: Recorder, queue: str, ids: list[str],
                         claim_id: str) -> bool:
    answer = await client.timed(recorder, "DELETE", f"{queue}/messages",
                                params={"ids": ",".join(ids), "claim_ids": claim_id})
    return answer is not None


async def ping_workload(client: Client, settings: Settings) -> dict[str, object]:
    recorder = settings.recorder()

    async def operation(due: float | None) -> bool:
        await client.timed(recorder, "GET", "/v2/ping", since=due)
        return True

    await drive(settings, recorder, operation)
    return recorder.summary("ping")


async def post_workload(client: Client, settings: Settings) -> dict[str, object]:
    queue = f"/v2/queues/post-{uuid.uuid4().hex[:8]}"
    recorder = settings.recorder()
    body = {"messages": message_bodies(settings, settings.batch)}

    async def operation(due: float | None) -> bool:
        if await client.timed(recorder, "POST", f"{queue}/messages", body=body, since=due):
            recorder.messages += settings.batch
        return True

    await drive(settings, recorder, operation)
    summary = recorder.summary("post")
    await client.request("DELETE", queue)
    return summary


async def claim_delete_workload(client: Client, settings: Settings) -> dict[str, object]:
    queue = f"/v2/queues/claim-{uuid.uuid4().hex[:8]}"
    recorder = settings.recorder()
    claims = settings.requests // 2 + settings.concurrency
    if settings.rate > 0:
        claims = min(claims, int(settings.rate * settings.duration) + settings.concurrency)
    await post_batches(client, queue, settings, claims * settings.batch)
    recorder.restart()

    async def operation(due: float | None) -> bool:
        claimed = await claim(client, recorder, queue, settings, due)
        if claimed is None:
            return True
        if claimed.status == 204:
            return False  # the backlog is used up
        ids = [m["id"] for m in claimed.document["messages"]]
        if await delete_claimed(client, recorder, queue, ids, claim_id_of(claimed)):
            recorder.messages += len(ids)
        return True

    await drive(settings, recorder, operation, cost=2)
    summary = recorder.summary("claim-delete")
    await client.request("DELETE", queue)
    return summary


async def produce_and_consume(client: Client, settings: Settings, recorder: Recorder,
                              queue: str, *, poison: bool) -> None:
    """Producers and consumers on one queue until the bounds (cycle and poison)."""
    producers = max(1, settings.concurrency // 2)
    consumers = max(1, settings.concurrency - producers)
    posted = itertools.count(0, settings.batch)
    stop = asyncio.Event()

    async def produce(due: float | None) -> bool:
        first = next(posted)
        body = {"messages": message_bodies(settings, settings.batch, first=first,
                                           poison=poison)}
        await client.timed(recorder, "POST", f"{queue}/messages", body=body, since=due)
        return True

    async def consumer() -> None:
        # Claim, delete, and release when poison was left: three requests at most.
        while not stop.is_set() and recorder.reserve(3):
            claimed = await claim(client, recorder, queue, settings, None)
            if claimed is None:
                continue
            if claimed.status == 204:
                if settings.wait <= 0:
                    await asyncio.sleep(0.005)  # the consumers caught up
                continue
            arrived = time.time()
            messages = claimed.document["messages"]
            recorder.end_to_end.extend(arrived - m["body"]["t"] for m in messages)
            good = [m["id"] for m in messages if not m["body"]["p"]]
            claim_id = claim_id_of(claimed)
            if good and await delete_claimed(client, recorder, queue, good, claim_id):
                recorder.messages += len(good)
            if len(good) < len(messages):  # a failing consumer gives the rest back
                await client.timed(recorder, "DELETE", f"{queue}/claims/{claim_id}")

    async def producers_then_stop() -> None:
        await drive(settings, recorder, produce, workers=producers)
        stop.set()

    await asyncio.gather(producers_then_stop(), *(consumer() for _ in range(consumers)))


async def cycle_workload(client: Client, settings: Settings) -> dict[str, object]:
    queue = f"/v2/queues/cycle-{uuid.uuid4().hex[:8]}"
    recorder = settings.recorder()
    await produce_and_consume(client, settings, recorder, queue, poison=False)
    summary = recorder.summary("cycle")
    await client.request("DELETE", queue)
    return summary


async def poison_workload(client: Client, settings: Settings) -> dict[str, object]:
    name = f"poison-{uuid.uuid4().hex[:8]}"
    queue, dead = f"/v2/queues/{name}", f"/v2/queues/{name}-dlq"
    for path, metadata in ((dead, {}), (queue, {"_max_claim_count": MAX_CLAIM_COUNT,
                                                 "_dead_letter_queue": f"{name}-dlq"})):
        answer = await client.request("PUT", path, body=metadata)
        if answer.status not in (201, 204):
            raise RuntimeError(f"queue create answered {answer.status}: {answer.document}")
    recorder = settings.recorder()
    await produce_and_consume(client, settings, recorder, queue, poison=True)
    elapsed = recorder.elapsed()
    stats = await client.request("GET", f"{dead}/stats")
    moved = int(stats.document["messages"]["total"]) if stats.status == 200 else -1
    recorder.extra.update(dead_letter_moves=moved,
                          dead_letter_moves_per_s=round(moved / elapsed, 1))
    summary = recorder.summary("poison", elapsed)
    summary["good_msgs_per_s"] = summary["msgs_per_s"]
    await client.request("DELETE", queue)
    await client.request("DELETE", dead)
    return summary


WORKLOADS: dict[str, Callable[[Client, Settings], Awaitable[dict[str, object]]]] = {
    "ping": ping_workload,
    "post": post_workload,
    "claim-delete": claim_delete_workload,
    "cycle": cycle_workload,
    "poison": poison_workload,
}
