"""The scaling cases over HTTP, against a running zq: does the cost stay flat as work grows?

Run by benchmarks/zaqar_side_by_side.py (``--scaling``, on by default)
against zq on Redis and on PostgreSQL. The queues are filled through the
storage contract in this process (the server's own storage URI, several
threads at once), so the setup does not go through HTTP; only the timed
requests do, one at a time on one keep-alive connection:

- claims of 10 (each released again untimed, so the queue keeps its
  shape) on a queue of each of ``sizes`` free messages (1k, 100k; 1M when
  asked) and on a queue with ``held`` messages held by live claims at its
  head and 1,000 free ones behind them (benchmarks/claim_scaling.py's
  cases, over HTTP); p50/p99 and their ratio to the smallest queue's;
- with ``queues`` queues in one project: the first page of
  ``GET /v2/queues`` (10 queues) vs the page after a marker 11 queues
  before the end, alternating; the stats of the first and the last queue;
  and ``GET /v2/health`` (admin: it counts the alive messages of the
  whole backend), each with its ratio to the first page or first stats.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from benchmarks import claim_scaling, queue_paging
from benchmarks.loadgen.client import Client
from benchmarks.loadgen.stats import Recorder, percentile
from benchmarks.loadgen.workloads import claim_id_of
from zq.storage import open_storage
from zq.storage.base import Storage

FREE_BEHIND_HELD = 1000
LIST_PROJECT = "scaling-queues"
FILL_THREADS = 4
Row = dict[str, object]


def fill(storage: Storage, queue: str, count: int) -> None:
    """``count`` messages into ``queue`` of claim_scaling.PROJECT, several posts at once."""
    share = -(-count // FILL_THREADS)
    parts = [min(share, count - start) for start in range(0, count, share)]
    with ThreadPoolExecutor(len(parts)) as pool:
        list(pool.map(lambda part: claim_scaling.fill(storage, queue, part), parts))


def prepare(uri: str, sizes: list[int], held: int, queues: int) -> tuple[list[tuple[str, str]],
                                                                             list[str], float]:
    """Fill the claim queues and create the listed queues; (case, queue) pairs, names, seconds."""
    started = time.perf_counter()
    storage = open_storage(uri)
    cases = []
    try:
        for size in sizes:
            queue = f"scale-{size}"
            fill(storage, queue, size)
            cases.append((f"claim, queue of {size:,}", queue))
        if held:
            queue = f"scale-held-{held}"
            fill(storage, queue, held + FREE_BEHIND_HELD)
            claim_scaling.hold(storage, queue, held)
            cases.append((f"claim behind {held:,} held", queue))
        names = queue_paging.queue_names(queues)
        queue_paging.create_queues(storage, LIST_PROJECT, names)
    finally:
        storage.close()
    return cases, names, time.perf_counter() - started


def row(backend: str, case: str, latencies: list[float], base: Row | None) -> Row:
    ordered = sorted(latencies)
    p50, p99 = percentile(ordered, 50) * 1000, percentile(ordered, 99) * 1000
    result: Row = {"backend": backend, "case": case, "requests": len(ordered),
                   "p50_ms": round(p50, 2), "p99_ms": round(p99, 2)}
    if base is not None:
        result.update(p50_over_base=round(p50 / float(base["p50_ms"]), 2),  # type: ignore[arg-type]
                      p99_over_base=round(p99 / float(base["p99_ms"]), 2))  # type: ignore[arg-type]
    return result


async def claim_latencies(client: Client, queue: str, rounds: int) -> list[float]:
    recorder = Recorder(max_requests=rounds, duration=float("inf"))
    path = f"/v2/queues/{queue}"
    for _ in range(rounds):
        answer = await client.timed(recorder, "POST", f"{path}/claims",
                                    body={"ttl": 60, "grace": 60}, params={"limit": "10"})
        if answer is None or answer.status != 201 or len(answer.document["messages"]) != 10:
            raise RuntimeError(f"a claim on {queue} did not return 10 messages")
        await client.request("DELETE", f"{path}/claims/{claim_id_of(answer)}")
    return recorder.latencies


async def alternating(client: Client, rounds: int,
                      requests: dict[str, Callable[[Recorder], object]]) -> dict[str, list[float]]:
    """``rounds`` of each request, the order reversed every round; latencies by name."""
    recorders = {name: Recorder(max_requests=rounds, duration=float("inf")) for name in requests}
    order = list(requests)
    for n in range(rounds):
        for name in (order if n % 2 == 0 else order[::-1]):
            if await requests[name](recorders[name]) is None:  # type: ignore[misc]
                raise RuntimeError(f"{name} failed on {client.url}")
    return {name: recorder.latencies for name, recorder in recorders.items()}


async def measure(url: str, backend: str, cases: list[tuple[str, str]], names: list[str],
                  rounds: int) -> list[Row]:
    rows: list[Row] = []
    client = Client(url, claim_scaling.PROJECT, 1)
    lister = Client(url, LIST_PROJECT, 1, headers={"X-Roles": "admin"})
    try:
        base = None
        for case, queue in cases:
            rows.append(row(backend, case, await claim_latencies(client, queue, rounds), base))
            base = base or rows[-1]
        deep = names[-queue_paging.PAGE - 1]
        page = {"limit": str(queue_paging.PAGE)}
        timings = await alternating(lister, rounds, {
            "list, first page": lambda r: lister.timed(r, "GET", "/v2/queues", params=page),
            "list, page near the end": lambda r: lister.timed(
                r, "GET", "/v2/queues", params={**page, "marker": deep}),
            "stats, first queue": lambda r: lister.timed(
                r, "GET", f"/v2/queues/{names[0]}/stats"),
            "stats, last queue": lambda r: lister.timed(
                r, "GET", f"/v2/queues/{names[-1]}/stats"),
            "health (backend-wide)": lambda r: lister.timed(r, "GET", "/v2/health"),
        })
        first = row(backend, f"list, first page ({len(names):,} queues)",
                    timings["list, first page"], None)
        stats = row(backend, "stats, first queue", timings["stats, first queue"], None)
        rows += [first, row(backend, "list, page near the end",
                            timings["list, page near the end"], first),
                 stats, row(backend, "stats, last queue", timings["stats, last queue"], stats),
                 row(backend, "health (backend-wide)", timings["health (backend-wide)"], stats)]
    finally:
        await client.close()
        await lister.close()
    return rows


def run(url: str, uri: str, backend: str, *, sizes: list[int], held: int, queues: int,
        rounds: int) -> list[Row]:
    """Prepare on ``uri`` (the server's storage), then time every case against ``url``."""
    cases, names, setup = prepare(uri, sizes, held, queues)
    rows = asyncio.run(measure(url, backend, cases, names, rounds))
    for line in rows:
        line["setup_s"] = round(setup, 1)
    return rows


def table(rows: list[Row]) -> str:
    lines = ["| backend | case | p50 ms | p99 ms | p50 / base | p99 / base |",
             "|---|---|---|---|---|---|"]
    for line in rows:
        lines.append(f"| {line['backend']} | {line['case']} | {line['p50_ms']} | "
                     f"{line['p99_ms']} | {line.get('p50_over_base', 'base')} | "
                     f"{line.get('p99_over_base', 'base')} |")
    return "\n".join(lines)
