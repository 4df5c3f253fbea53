"""Post throughput on a queue WITHOUT subscriptions: main's post path vs this one.

    python benchmarks/event_bodies_cost.py [--rounds 5] [--posts 400] [--storage URI ...]

In one process, per backend: "before" is QueueService with the subscribed
check skipped (main's post path), "after" the real one (a cached
``for_queue`` read every zq.subscribed.SECONDS per queue; the clock is real,
so the cache expires as in production). Posts of 10 messages, alternating
which side goes first, ``--rounds`` times; prints msgs/s per run, the
medians, their ratio and the load average. Also, for scale, "subscribed":
the same posts to a queue with a subscription (bodies in the events).
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

BATCH = 10


def rate(svc: QueueService, project: str, queue: str, posts: int) -> float:
    document = {"messages": [{"body": {"order": i, "sku": "abc"}} for i in range(BATCH)]}
    start = time.perf_counter()
    for _ in range(posts):
        svc.post_messages(project, queue, document, client_id=None, body_size=400)
    return posts * BATCH / (time.perf_counter() - start)


def bench(uri: str, rounds: int, posts: int) -> None:
    storage = open_storage(uri)
    project = f"bench-{uuid.uuid4().hex[:8]}"
    before = QueueService(Limits(), SingleBackend(storage))
    before._with_event_bodies = lambda storage, project, queue, new: new  # type: ignore
    after = QueueService(Limits(), SingleBackend(storage))
    storage.subscriptions.create(project, "subscribed", "http://127.0.0.1:9/x", 3600, {})
    runs: dict[str, list[float]] = {"before": [], "after": [], "subscribed": []}
    try:
        for i in range(rounds):
            order = [("before", before), ("after", after)]
            if i % 2:
                order.reverse()
            for name, svc in order:
                runs[name].append(rate(svc, project, f"plain-{i}", posts))
            runs["subscribed"].append(rate(after, project, "subscribed", posts))
            print(f"{uri.split(':')[0]} round {i}: " + ", ".join(
                f"{k} {v[-1]:.0f}" for k, v in runs.items()), flush=True)
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"{uri.split(':')[0]}: median msgs/s before {med['before']:.0f} after "
              f"{med['after']:.0f} ratio after/before {med['after'] / med['before']:.3f}; "
              f"subscribed {med['subscribed']:.0f} "
              f"({med['subscribed'] / med['before']:.3f} of before)")
    finally:
        for i in range(rounds):
            storage.queues.delete(project, f"plain-{i}")
        storage.queues.delete(project, "subscribed")
        storage.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--posts", type=int, default=400)
    parser.add_argument("--storage", nargs="*", default=None)
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
