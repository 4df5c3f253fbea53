"""Post throughput on a queue WITHOUT subscriptions: main's post path vs this one.

    python benchmarks/event_bodies_cost.py [--rounds 5] [--posts 400] [--storage URI ...]

In one process, per backend: "before" is QueueService with the subscribed
check skipped (main's post path), "after" the real one (a cached
``for_queue`` read every zq.service.subscribed.SECONDS per queue; the clock is real,
so the cache expires as in production), each on its own queue. Posts of 10
messages in blocks of 20, the sides alternating block by block (the
machine's load changes under a longer run), ``--rounds`` times; prints
msgs/s per round, the medians, their ratio, what the check costs a post
when the cache answers, and the load average. Also, for scale,
"subscribed": the same posts to a queue with a subscription (bodies in
the events).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from zq.config import Limits
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.storage import open_storage
from zq.storage.base import Storage
from zq.storage.records import NewMessage

BATCH = 10
BLOCK = 20  # posts timed together; the sides alternate block by block


def timed(svc: QueueService, project: str, queue: str, posts: int) -> float:
    document = {"messages": [{"body": {"order": i, "sku": "abc"}} for i in range(BATCH)]}
    start = time.perf_counter()
    for _ in range(posts):
        svc.post_messages(project, queue, document, client_id=None, body_size=400)
    return time.perf_counter() - start


def added_cost(svc: QueueService, storage: Storage, project: str, queue: str) -> float:
    """Microseconds the subscribed check adds to a post when the cache answers."""
    new: list[NewMessage] = []
    svc._with_event_bodies(storage, project, queue, new)  # fills the cache
    calls = 20_000
    start = time.perf_counter()
    for _ in range(calls):
        svc._with_event_bodies(storage, project, queue, new)
    return (time.perf_counter() - start) / calls * 1e6


def bench(uri: str, rounds: int, posts: int) -> None:
    storage = open_storage(uri)
    name = uri.split(":")[0]
    project = f"bench-{uuid.uuid4().hex[:8]}"
    before = QueueService(Limits(), SingleBackend(storage))
    before._with_event_bodies = lambda storage, project, queue, new: new  # type: ignore
    after = QueueService(Limits(), SingleBackend(storage))
    storage.subscriptions.create(project, "subscribed", "http://127.0.0.1:9/x", 3600, {})
    sides = {"before": (before, "plain-before"), "after": (after, "plain-after"),
             "subscribed": (after, "subscribed")}
    runs: dict[str, list[float]] = {side: [] for side in sides}
    try:
        for i in range(rounds):
            spent = dict.fromkeys(sides, 0.0)
            for block in range(posts // BLOCK):
                order = list(sides)
                if (i + block) % 2:
                    order.reverse()
                for side in order:
                    svc, queue = sides[side]
                    spent[side] += timed(svc, project, queue, BLOCK)
            for side in sides:
                runs[side].append(posts // BLOCK * BLOCK * BATCH / spent[side])
            print(f"{name} round {i}: " + ", ".join(
                f"{k} {v[-1]:.0f}" for k, v in runs.items()), flush=True)
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"{name}: median msgs/s before {med['before']:.0f} after "
              f"{med['after']:.0f} ratio after/before {med['after'] / med['before']:.3f}; "
              f"subscribed {med['subscribed']:.0f} "
              f"({med['subscribed'] / med['before']:.3f} of before); the check itself "
              f"{added_cost(after, storage, project, 'plain-after'):.2f} us per post "
              f"(cache hit)", flush=True)
    finally:
        for queue in ("plain-before", "plain-after", "subscribed"):
            storage.queues.delete(project, queue)
        storage.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n"
               "  python benchmarks/event_bodies_cost.py --rounds 5 --posts 300\n"
               "  python benchmarks/event_bodies_cost.py --storage "
               "redis://127.0.0.1:6379/11?prefix=evb",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of alternating blocks (default: %(default)s)")
    parser.add_argument("--posts", type=int, default=400,
                        help="posts of 10 messages per side and round, in blocks of 20 "
                             "(default: %(default)s)")
    parser.add_argument("--storage", nargs="*", default=None, metavar="URI",
                        help="storage URIs, one run each (default: a temporary SQLite file "
                             "and redis://127.0.0.1:6379/11)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        uris = args.storage or [f"sqlite:///{directory}/bench.sqlite3",
                                "redis://127.0.0.1:6379/11"]
        print("load average before:", Path("/proc/loadavg").read_text().strip())
        for uri in uris:
            bench(uri, args.rounds, args.posts)
        print("load average after:", Path("/proc/loadavg").read_text().strip())


if __name__ == "__main__":
    main()
